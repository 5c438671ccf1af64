#!/usr/bin/env bash
# Builds glass with warnings as errors and runs the whole test suite with ctest.
#   scripts/test.sh              Release build in build-test/
#   scripts/test.sh --sanitize   AddressSanitizer + UndefinedBehaviorSanitizer build in build-asan/
# Tests needing ../shared/fixtures skip when it is absent; GLASS_REQUIRE_FIXTURES=1 makes them fail.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-test
flags=(-DCMAKE_BUILD_TYPE=Release -DGLASS_WERROR=ON)
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DGLASS_WERROR=ON -DGLASS_SANITIZE=ON)
fi
cmake -S . -B "$dir" -G Ninja "${flags[@]}"
cmake --build "$dir"
ctest --test-dir "$dir" --output-on-failure -j "$(nproc)"
