#!/usr/bin/env bash
# Many sequences at once, side by side with llama.cpp on the same files, alternating runs:
# llama-batched-bench and `glass bench --npl` with the same test (-npp/-ntg/-npl), one JSON line per
# test and tool (llama-batched-bench's jsonl fields), then a table of the aggregate speeds and their
# ratios. The files are made as scripts/bench-side-by-side.sh makes them (glass synth + quantize).
#   scripts/bench-batched-side-by-side.sh LLAMA_BATCHED_BENCH DIR [THREADS] [REPS]
# FILES (environment) picks the files (default "smollm2-q4_0 smollm2-q4_k_m l1b-q4_0 l1b-q4_k_m");
# NPL, NPP, NTG (environment) the test (default 1,2,4,8,16,32 / 128 / 128).
set -euo pipefail
batched=${1:?path to llama-batched-bench}
dir=${2:?directory for the model files}
threads=${3:-2}
reps=${4:-1}
npl=${NPL:-1,2,4,8,16,32}
npp=${NPP:-128}
ntg=${NTG:-128}
glass="$(cd "$(dirname "$0")/.." && pwd)/build/bin/glass"
[ -x "$glass" ] || glass="$(cd "$(dirname "$0")/.." && pwd)/build-test/bin/glass"
files=${FILES:-"smollm2-q4_0 smollm2-q4_k_m l1b-q4_0 l1b-q4_k_m"}
# shellcheck source=scripts/bench-files.sh
source "$(dirname "$0")/bench-files.sh"
make_files
# The cache both need: the largest test's pl * (pp + tg), plus a block per sequence for glass.
max_kv=0
IFS=, read -r -a pls <<<"$npl"
IFS=, read -r -a pps <<<"$npp"
IFS=, read -r -a tgs <<<"$ntg"
for pl in "${pls[@]}"; do for pp in "${pps[@]}"; do for tg in "${tgs[@]}"; do
  kv=$((pl * (pp + tg)))
  [ "$kv" -gt "$max_kv" ] && max_kv=$kv
done; done; done
out=$(mktemp)
echo "load before: $(cat /proc/loadavg)"
for f in $files; do
  for ((r = 0; r < reps; r++)); do
    "$batched" -m "$dir/$f.gguf" -t "$threads" -tb "$threads" -c "$max_kv" -b 512 -ub 512 -npp "$npp" -ntg "$ntg" \
      -npl "$npl" --output-format jsonl 2>/dev/null | grep '^{' | sed "s|^|llama.cpp $f |" | tee -a "$out"
    "$glass" bench -m "$dir/$f.gguf" -t "$threads" -b 512 -npp "$npp" -ntg "$ntg" -npl "$npl" -o jsonl \
      2>/dev/null | grep '^{' | sed "s|^|glass     $f |" | tee -a "$out"
  done
done
echo "load after: $(cat /proc/loadavg)"
python3 - "$out" <<'EOF'
import json, sys, collections
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    tool, f, js = line.split(None, 2)
    j = json.loads(js)
    runs[(f, j["pp"], j["tg"], j["pl"], tool)].append(j)
keys = sorted({k[:4] for k in runs}, key=lambda k: (k[0], k[1], k[2], k[3]))
print("| file | pp | tg | pl | llama.cpp S_PP | glass S_PP | ratio | llama.cpp S_TG | glass S_TG | ratio | llama.cpp S | glass S | ratio |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
mean = lambda xs: sum(xs) / len(xs)
for k in keys:
    l, g = runs.get(k + ("llama.cpp",)), runs.get(k + ("glass",))
    if not l or not g:
        continue
    cells = []
    for field in ("speed_pp", "speed_tg", "speed"):
        a, b = mean([x[field] for x in l]), mean([x[field] for x in g])
        cells += [f"{a:.1f}", f"{b:.1f}", f"{b / a:.2f}" if a > 0 else "-"]
    print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | " + " | ".join(cells) + " |")
EOF
rm -f "$out"
