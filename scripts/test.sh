#!/usr/bin/env bash
# Builds glass with warnings as errors and runs the whole test suite with ctest.
#   scripts/test.sh              Release build in build-test/
#   scripts/test.sh --sanitize   AddressSanitizer + UndefinedBehaviorSanitizer build in build-asan/
#   scripts/test.sh [--sanitize] EXE...   only the named test executables (e.g. glass_backend_test;
#                                         glass_python_test: the Python package's pytest suite)
#   scripts/test.sh --sanitize-clang EXE...  the named test executables in the fuzz build folder
#                                         (scripts/fuzz.sh: clang-14, ASan + UBSan, the library
#                                         instrumented for libFuzzer too), so that CI builds the
#                                         sanitized library once for these tests and the harnesses
# Tests needing ../shared/fixtures skip when it is absent; GLASS_REQUIRE_FIXTURES=1 makes them fail.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-test
flags=(-DCMAKE_BUILD_TYPE=Release -DGLASS_WERROR=ON)
if [ "${1:-}" = "--sanitize" ]; then
  shift
  dir=build-asan
  # -O1 -g1: the usual sanitizer optimization level, half the compile time of -O2 -g; line tables
  # are enough for the sanitizers' stack traces. The examples and benchmarks run no test: left out
  # (the glass command is built: its tests run it).
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
         -DGLASS_WERROR=ON -DGLASS_SANITIZE=ON -DGLASS_BUILD_TOOLS=OFF)
elif [ "${1:-}" = "--sanitize-clang" ]; then
  shift
  if [ $# -eq 0 ]; then echo "scripts/test.sh --sanitize-clang: name the test executables" >&2; exit 2; fi
  dir=${GLASS_FUZZ_DIR:-build-fuzz}
  flags=()  # fuzz.sh configures that folder
  bash scripts/fuzz.sh configure
fi
# The Python package (python/) and its pytest suite, in the Release build: with pybind11 and an
# interpreter that has numpy and pytest (python3 on PATH, else Debian's /usr/bin/python3). Without
# them glass_python_test reports itself skipped, except with GLASS_REQUIRE_FIXTURES=1 (CI), where
# the package is configured anyway so that what is missing fails the run.
if [ "$dir" = build-test ]; then
  python=""
  for py in "$(command -v python3 || true)" /usr/bin/python3; do
    if [ -n "$py" ] && "$py" -c 'import numpy, pytest' 2>/dev/null; then python=$py; break; fi
  done
  pybind11=no
  for f in /usr/lib/cmake/pybind11 /usr/share/cmake/pybind11 /usr/local/lib/cmake/pybind11; do
    if [ -f "$f/pybind11Config.cmake" ]; then pybind11=yes; fi
  done
  if [ -n "$python" ] && [ $pybind11 = yes ]; then
    flags+=(-DGLASS_BUILD_PYTHON=ON "-DPython_EXECUTABLE=$python")
  elif [ "${GLASS_REQUIRE_FIXTURES:-}" = 1 ]; then
    flags+=(-DGLASS_BUILD_PYTHON=ON)
  fi
fi
if [ ${#flags[@]} -gt 0 ]; then cmake -S . -B "$dir" -G Ninja "${flags[@]}"; fi
# The official openai npm client that glass_openai_client_test drives (src/server/CMakeLists.txt),
# into the build tree; pinned per node major: 6.x on node 20-21 (7.x wants node 22), 4.x on Debian
# 12's own node 18 (the last major that supports it; the test's 12 checks pass with both).
# Offline or without npm the test reports itself skipped (failed with GLASS_REQUIRE_FIXTURES=1).
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
openai_version=6.49.0
if [ "$node_major" -lt 20 ]; then openai_version=4.95.0; fi
if [[ $# -eq 0 || " $* " == *" glass_openai_client_test "* ]] && command -v npm >/dev/null; then
  installed=$(node -p 'require(process.argv[1]).version' "$PWD/$dir/node/node_modules/openai/package.json" \
                 2>/dev/null || true)
  if [ "$installed" != "$openai_version" ]; then
    npm install --prefix "$dir/node" --no-audit --no-fund --no-save --loglevel=error "openai@$openai_version" ||
      echo "warning: npm install openai@$openai_version failed; glass_openai_client_test will skip" >&2
  fi
fi
ctest_args=(--test-dir "$dir" --output-on-failure -j "$(nproc)")
if [ $# -gt 0 ]; then
  cmake --build "$dir" --target "$@"
  labels=$(IFS='|'; echo "$*")
  ctest_args+=(-L "^($labels)\$")
else
  cmake --build "$dir"
fi
log="$dir/ctest-last.log"
ctest "${ctest_args[@]}" | tee "$log"
# A test that skips for want of a tool or fixture passes ctest; where the fixtures are required
# (CI) every skip is a failure, whatever reported it (a gtest GTEST_SKIP, a script's exit 77).
if [ "${GLASS_REQUIRE_FIXTURES:-}" = 1 ] && grep -q '\*\*\*Skipped' "$log"; then
  echo "error: GLASS_REQUIRE_FIXTURES=1 and these tests skipped:" >&2
  grep '\*\*\*Skipped' "$log" >&2
  exit 1
fi
