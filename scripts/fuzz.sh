#!/usr/bin/env bash
# Runs a libFuzzer harness (fuzz/) for a bounded time; exits nonzero on any crash, leak, timeout,
# out-of-memory or sanitizer report.
#   scripts/fuzz.sh NAME SECONDS [libFuzzer args...]   one harness (json, gguf, safetensors, tokenizer_json,
#                                                      tokenizer_encode, jinja, npy, gbnf, json_schema,
#                                                      regex, http_body, http_request)
#   scripts/fuzz.sh all SECONDS                        every harness, SECONDS each, as many at a time
#                                                      as there are cores (GLASS_FUZZ_JOBS)
#   scripts/fuzz.sh configure                          only configure the build folder
# Builds build-fuzz/ (clang-14, ASan + UBSan, library modules only) when needed, writes the seed
# corpora from ../shared/fixtures (fuzz/make_corpus.py) into build-fuzz/seeds/, and keeps what the
# fuzzer finds in build-fuzz/corpus/NAME/ across runs. A crashing input is saved as
# build-fuzz/artifacts/NAME-crash-<sha1> (reproduce: build-fuzz/fuzz/glass_fuzz_NAME FILE).
# The folder is configured with the tests as well (built only when asked): `scripts/test.sh
# --sanitize-clang EXE...` builds and runs test programs there, over the same instrumented library.
# Environment: GLASS_FUZZ_DIR (build folder, default build-fuzz), GLASS_FUZZ_OPT (optimization flags
# when that folder is first configured, default "-O1 -g1"), GLASS_FIXTURES (default ../shared/fixtures),
# GLASS_FUZZ_TIMEOUT (seconds one input may take, default 10, 30 for -O0 builds).
set -euo pipefail
cd "$(dirname "$0")/.."
harnesses=(json gguf safetensors tokenizer_json tokenizer_encode jinja npy gbnf json_schema regex http_body http_request)
if [ $# -lt 2 ] && [ "${1:-}" != configure ]; then
  echo "usage: scripts/fuzz.sh NAME|all SECONDS [libFuzzer args...] | configure (NAME: ${harnesses[*]})" >&2
  exit 2
fi
name=$1
seconds=${2:-0}
shift $(($# < 2 ? $# : 2))
dir=${GLASS_FUZZ_DIR:-build-fuzz}  # a second folder keeps another configuration (CI's -O0)
fixtures=${GLASS_FIXTURES:-$PWD/../shared/fixtures}

if [ ! -f "$dir/build.ninja" ]; then
  # -O1 -g1 as the sanitizer build (scripts/test.sh --sanitize): line tables for the reports, and
  # inputs run 2-3 times faster than at -O0. CI's short runs take GLASS_FUZZ_OPT="-O0 -g1", which
  # builds about 3 times faster. Only the targets asked for are built: the harnesses build only the
  # library modules they link.
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=${GLASS_FUZZ_OPT:--O1 -g1} -DNDEBUG" -DGLASS_FUZZ=ON -DGLASS_WERROR=ON \
    -DGLASS_BUILD_TESTS=ON -DGLASS_BUILD_TOOLS=OFF -DGLASS_BUILD_CLI=OFF -DGLASS_INSTALL=OFF \
    -DGLASS_BUILD_PYTHON=OFF "-DGLASS_FIXTURES_DIR=$fixtures" >/dev/null
elif ! grep -q '^GLASS_BUILD_TESTS:BOOL=ON' "$dir/CMakeCache.txt"; then
  cmake -S . -B "$dir" -DGLASS_BUILD_TESTS=ON >/dev/null  # a folder configured before the tests were
fi
if [ "$name" = configure ]; then exit 0; fi

prepare() {  # build the harnesses named, and the seed corpora
  cmake --build "$dir" --target "${@/#/glass_fuzz_}"
  if [ ! -d "$dir/seeds/json" ] || [ fuzz/make_corpus.py -nt "$dir/seeds/json" ]; then
    rm -rf "$dir/seeds"
    python3 fuzz/make_corpus.py "$fixtures" "$dir/seeds"
  fi
}

if [ "$name" = all ]; then
  # Built once, then run side by side: each harness still has SECONDS of one core. Each one's
  # output goes to its own file and is shown when it ends, so reports do not interleave.
  prepare "${harnesses[@]}"
  jobs=${GLASS_FUZZ_JOBS:-$(nproc)}
  declare -A pids=()
  failed=()
  finish() {  # wait for harness $1, show its output, note a failure
    if ! wait "${pids[$1]}"; then failed+=("$1"); fi
    cat "$dir/fuzz-all-$1.out"
  }
  running=()
  for h in "${harnesses[@]}"; do
    if [ ${#running[@]} -ge "$jobs" ]; then finish "${running[0]}"; running=("${running[@]:1}"); fi
    GLASS_FUZZ_PREPARED=1 "$0" "$h" "$seconds" "$@" >"$dir/fuzz-all-$h.out" 2>&1 &
    pids[$h]=$!
    running+=("$h")
  done
  for h in "${running[@]}"; do finish "$h"; done
  if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz.sh: failed: ${failed[*]}" >&2
    exit 1
  fi
  exit 0
fi
case " ${harnesses[*]} " in
  *" $name "*) ;;
  *) echo "fuzz.sh: unknown harness '$name' (${harnesses[*]})" >&2; exit 2 ;;
esac
if [ -z "${GLASS_FUZZ_PREPARED:-}" ]; then prepare "$name"; fi

# Longest input per harness: the largest seed, with room to grow; small inputs mutate faster.
case $name in
  gguf | tokenizer_json) max_len=262144 ;;
  safetensors | jinja) max_len=65536 ;;
  json_schema | http_body) max_len=16384 ;;
  *) max_len=8192 ;;
esac
dict=()
case $name in
  gguf) dict=(-dict=fuzz/gguf.dict) ;;
  json | safetensors | tokenizer_json) dict=(-dict=fuzz/json.dict) ;;
  jinja) dict=(-dict=fuzz/jinja.dict) ;;
  npy) dict=(-dict=fuzz/npy.dict) ;;
  gbnf) dict=(-dict=fuzz/gbnf.dict) ;;
  json_schema) dict=(-dict=fuzz/json_schema.dict) ;;
  regex) dict=(-dict=fuzz/regex.dict) ;;
  http_body) dict=(-dict=fuzz/http.dict) ;;
  http_request) dict=(-dict=fuzz/http_request.dict) ;;
esac
mkdir -p "$dir/corpus/$name" "$dir/artifacts"
# One input taking 10 s at -O1 is a hang. Unoptimized builds run the same input 3-4 times slower:
# the largest grammar the engine accepts (2^20 elements after expanding repetitions) takes 13-15 s
# to compile, bind and walk at -O0 and 3.4 s at -O1 (Zen 3), so -O0 builds get 30 s.
# The timeout is wall-clock time: a fuzzer sharing its cores with a build (nice'd behind it) sees
# 1-second inputs take over 10 s, so runs beside other work set GLASS_FUZZ_TIMEOUT higher.
timeout=10
if grep -q -- '-O0' "$dir/CMakeCache.txt"; then timeout=30; fi
timeout=${GLASS_FUZZ_TIMEOUT:-$timeout}
# -malloc_limit_mb: one allocation of 128 MiB from an
# input under 256 KiB breaks the rule that a rejected file costs at most 2x its size + 64 MiB.
# -rss_limit_mb bounds the whole process (the encode harness holds five fixture tokenizers).
# The first corpus folder receives new inputs; the seeds stay as generated.
set +e
"$dir/fuzz/glass_fuzz_$name" -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=2048 -malloc_limit_mb=128 \
  -max_len="$max_len" -print_final_stats=1 "${dict[@]}" -artifact_prefix="$dir/artifacts/$name-" \
  "$@" "$dir/corpus/$name" "$dir/seeds/$name" 2>&1 | tee "$dir/fuzz-$name.log" |
  grep -Ev '^(#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|RELOAD)|[[:space:]]+NEW_FUNC|".*# Uses|###### )'
rc=${PIPESTATUS[0]}
set -e
runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$dir/fuzz-$name.log" | grep -o '[0-9]*$' || echo "?")
echo "fuzz.sh: $name: $runs executions in ${seconds}s, exit $rc (log: $dir/fuzz-$name.log)"
exit "$rc"
