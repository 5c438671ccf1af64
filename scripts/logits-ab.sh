#!/usr/bin/env bash
# Logits of two glass builds, byte for byte: for a refactoring that must not change a bit. Each case
# runs `glass logits` (prefill, decode, chunked:5) with both binaries on the same file and compares
# the .npy files with cmp.
#   scripts/logits-ab.sh BEFORE/bin/glass AFTER/bin/glass [WORKDIR]
# Files: SmolLM2-135M-shaped Q4_0 and F16 made in WORKDIR by AFTER's `glass synth` / `quantize`
# (deterministic), the bundled stories260K, and ../shared/fixtures' synthetic-arch models where present.
# Exit 1 when any case differs or fails with AFTER only.
set -uo pipefail
before=${1:?glass binary before} after=${2:?glass binary after}
dir=${3:-$(mktemp -d)}
root="$(cd "$(dirname "$0")/.." && pwd)"
arch="$root/../shared/fixtures/models/synthetic-arch"
mkdir -p "$dir"
[ -f "$dir/smollm2-f16.gguf" ] || "$after" synth --shape smollm2-135m --type f16 -o "$dir/smollm2-f16.gguf" >/dev/null
[ -f "$dir/smollm2-q4_0.gguf" ] || "$after" quantize "$dir/smollm2-f16.gguf" "$dir/smollm2-q4_0.gguf" q4_0 >/dev/null
stories="$root/models/stories260K.gguf"
long=1,1403,2407,5261,378,300,12,99,45,401,17,260,311,77,88,99,100,101,102,103,104,105,106,107,108,109,110
short=1,403,407,261,378,300,12,99,45,401,17,260,311,77,88,99,100,101,102,103,104,105,106,107,108,109,110
small=1,5,9,13,17,21,25,29,33,37,41,45,49,53,57,61,65,69,73,77,81,85,89,93,97,2,4
fail=0 n=0
compare() {  # name model tokens args...
  local name=$1 model=$2 toks=$3
  shift 3
  if ! "$before" logits -m "$model" --tokens "$toks" -o "$dir/b.npy" --log-disable "$@" 2>/dev/null; then
    echo "skip  $name (the earlier build refuses it)"
    return
  fi
  if ! "$after" logits -m "$model" --tokens "$toks" -o "$dir/a.npy" --log-disable "$@" 2>/dev/null; then
    echo "FAIL  $name"
    fail=1
    return
  fi
  n=$((n + 1))
  if cmp -s "$dir/b.npy" "$dir/a.npy"; then echo "same  $name"; else echo "DIFF  $name"; fail=1; fi
}
for mode in prefill decode chunked:5; do
  compare "smollm2-q4_0 $mode" "$dir/smollm2-q4_0.gguf" $long -t 2 --mode $mode
  compare "smollm2-q4_0 $mode lockstep" "$dir/smollm2-q4_0.gguf" $long -t 2 --mode $mode --decode-strategy lockstep
  compare "smollm2-q4_0 $mode no-repack" "$dir/smollm2-q4_0.gguf" $long -t 2 --mode $mode --no-repack
  compare "smollm2-f16 $mode" "$dir/smollm2-f16.gguf" $long -t 2 --mode $mode
  compare "smollm2-f16 $mode batch-invariant" "$dir/smollm2-f16.gguf" $long -t 2 --mode $mode --batch-invariant
  compare "stories260K $mode ref" "$stories" $short --backend ref --mode $mode
  compare "stories260K $mode ref decompose" "$stories" $short --backend ref --decompose --mode $mode
  compare "stories260K $mode kv-size 4096" "$stories" $short -t 2 --mode $mode --kv-size 4096
  compare "stories260K $mode f16 cache" "$stories" $short -t 2 --mode $mode --cache-type f16
  for m in gemma2-f32 gemma3-f32 gemma3n-f32 qwen3moe-f32 phi3-f32 gemma3-q4_k_m; do
    [ -f "$arch/$m.gguf" ] && compare "$m $mode" "$arch/$m.gguf" $small -t 2 --mode $mode -c 64 --kv-block-size 4
  done
done
echo "$n cases compared, $([ $fail = 0 ] && echo 'all identical' || echo 'DIFFERENCES')"
exit $fail
