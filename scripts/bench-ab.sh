#!/usr/bin/env bash
# Decode speed of one file under several glass settings, alternating, so that a shared machine's
# moving read rate falls on every variant alike: ROUNDS rounds, each running every variant once
# (`glass bench -p 0 -n NTOK -r 1`), then per variant the median, min and max tokens/s and every run.
#   scripts/bench-ab.sh FILE ROUNDS VARIANT...
# A variant is glass bench flags and/or NAME=VALUE environment settings, quoted as one argument;
# "" is the default. Example, the decode strategies on a new machine kind:
#   scripts/bench-ab.sh /tmp/bench/l1b-q4_k_m.gguf 5 "" "--decode-strategy spread" \
#     "--decode-strategy sequential" "GLASS_DECODE_STRATEGY=lockstep --no-repack"
# NTOK (environment, default 64): tokens per run; THREADS (default 2).
set -euo pipefail
file=${1:?model file}
rounds=${2:?rounds}
shift 2
[[ $# -ge 1 ]] || {
  echo "give at least one variant (\"\" is the default)" >&2
  exit 2
}
glass="$(cd "$(dirname "$0")/.." && pwd)/build/bin/glass"
ntok=${NTOK:-64}
threads=${THREADS:-2}
declare -a runs
for ((i = 0; i < rounds; i++)); do
  j=0
  for variant in "$@"; do
    envs=()
    flags=()
    read -r -a words <<<"$variant"
    for w in "${words[@]}"; do
      if [[ $w == *=* && $w != -* ]]; then envs+=("$w"); else flags+=("$w"); fi
    done
    t=$(env "${envs[@]}" "$glass" bench -m "$file" -t "$threads" -p 0 -n "$ntok" -r 1 "${flags[@]}" 2>/dev/null |
      awk -F'|' '$7 ~ /tg/ {split($8, v, " "); print v[1]}' || true)
    [[ -n $t ]] || {
      echo "glass bench failed for [$variant]" >&2
      exit 1
    }
    runs[j]="${runs[j]:-} $t"
    j=$((j + 1))
  done
done
j=0
for variant in "$@"; do
  # shellcheck disable=SC2086 # the runs are one space-separated list
  summary=$(printf '%s\n' ${runs[j]} | sort -n |
    awk '{v[NR] = $1} END {printf "median %.1f (min %.1f, max %.1f, %d runs)", v[int((NR + 1) / 2)], v[1], v[NR], NR}')
  echo "$(basename "$file") [$variant]: $summary:${runs[j]}"
  j=$((j + 1))
done
