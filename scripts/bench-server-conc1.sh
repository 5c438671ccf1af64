#!/usr/bin/env bash
# The server at concurrency 1 against `glass bench` on the same file, alternating on one machine:
# one glass serve, then PAIRS times `glass bench -p 0 -n 128 -r 2` followed by 4 streamed
# /v1/completions of 128 tokens from glass_server_load (built beside GLASS); prints each pair's
# server tok/s over the bench's tg128 and the median. The machine's speed drifts: only the ratio of
# a pair compares.
#   scripts/bench-server-conc1.sh GLASS MODEL [PAIRS=6] [--ban-token ID ...]
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,7p' "$0" >&2
  exit 2
fi
glass=$1
model=$2
pairs=${3:-6}
shift $(( $# >= 3 ? 3 : 2 ))
load=$(dirname "$glass")/glass_server_load
[ -x "$load" ] || { echo "$load not built (cmake --build BUILD --target glass_server_load)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/serve-lib.sh
source "$here/serve-lib.sh"
log=$(mktemp)
trap 'stop_server; rm -f "$log"' EXIT
start_glass "$glass" "$model" "$log" -np 16 -c 512 -t 2
"$load" "$SERVER_URL" -n 2 --max-tokens 16 -c 1 --temperature 0 "$@" >/dev/null
ratios=()
for ((i = 1; i <= pairs; i++)); do
  tg=$("$glass" bench -m "$model" -p 0 -n 128 -r 2 -t 2 2>/dev/null | tail -1 | awk -F'|' '{print $(NF-1)}' | awk '{print $1}')
  row=$("$load" "$SERVER_URL" -n 4 --max-tokens 128 -c 1 --temperature 0 "$@" | grep '^| 1 ')
  tps=$(echo "$row" | awk -F'|' '{print $8}' | tr -d ' ')
  itl=$(echo "$row" | awk -F'|' '{print $11}' | tr -d ' ')
  r=$(python3 -c "print(f'{$tps / $tg:.3f}')")
  echo "bench tg128 $tg tok/s ($(python3 -c "print(f'{1000 / $tg:.2f}')") ms/token); server $tps tok/s, ITL p50 $itl ms; ratio $r"
  ratios+=("$r")
done
python3 -c "import statistics, sys; v = [float(x) for x in sys.argv[1:]]; print(f'median {statistics.median(v):.3f} (min {min(v):.3f}, max {max(v):.3f})')" "${ratios[@]}"
