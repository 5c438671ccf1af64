#!/usr/bin/env bash
# Side-by-side speed against llama.cpp on the same files, alternating runs (the machine is shared,
# so only ratios within one run mean something). Makes the random-weight models of real shapes with
# glass itself (synth + quantize, byte-identical to llama-quantize's output since afe7c49, which
# writes tensors in llama.cpp's loader order as llama-quantize does) in DIR, then for each
# file runs llama-bench and glass bench with the same test definitions, REPS pairs each.
#   scripts/bench-side-by-side.sh LLAMA_BENCH DIR [THREADS] [REPS]
# Example: scripts/bench-side-by-side.sh ~/llama.cpp/build/bin/llama-bench /tmp/bench 2 2
# FILES (environment) picks the files, e.g. FILES="smollm2-q4_0 l1b-q4_0"; names are SHAPE-TYPE
# with SHAPE smollm2 (SmolLM2-135M), l1b (Llama-3.2-1B) or qwen (Qwen2.5-0.5B-like) and TYPE any
# `glass quantize` type (e.g. qwen-q4_k_m, l1b-q5_k_m). GLASS_ARGS (environment) adds flags to each
# glass bench, e.g. GLASS_ARGS="--isa avx2" against a llama.cpp built with -DGGML_NATIVE=OFF
# -DGGML_AVX512=OFF (both on the AVX2 tier).
set -euo pipefail
llama_bench=${1:?path to llama-bench}
dir=${2:?directory for the model files}
threads=${3:-2}
reps=${4:-2}
glass="$(cd "$(dirname "$0")/.." && pwd)/build/bin/glass"
read -r -a glass_args <<<"${GLASS_ARGS:-}"
files=${FILES:-"smollm2-q4_0 smollm2-q8_0 smollm2-q4_k_m smollm2-f16 l1b-q4_0 l1b-q8_0 l1b-q4_k_m"}
# shellcheck source=scripts/bench-files.sh
source "$(dirname "$0")/bench-files.sh"
make_files
echo "load before: $(cat /proc/loadavg)"
for f in $files; do
  for ((r = 0; r < reps; r++)); do
    "$llama_bench" -m "$dir/$f.gguf" -t "$threads" -p 512 -n 128 -r 3 2>/dev/null | grep -E "pp512|tg128" | sed "s|^|llama.cpp $f |"
    "$glass" bench -m "$dir/$f.gguf" -t "$threads" -p 512 -n 128 -r 3 "${glass_args[@]}" 2>/dev/null | grep -E "pp512|tg128" | sed "s|^|glass     $f |"
  done
done
"$glass" bench -m "$dir/l1b-q4_0.gguf" -t "$threads" -p 0 -n 128 -r 3 --bandwidth "${glass_args[@]}" 2>/dev/null | tail -3
echo "load after: $(cat /proc/loadavg)"
