#!/usr/bin/env bash
# glass serve against llama.cpp's llama-server on the same model file, alternating: each round
# starts one server on a free loopback port, runs scripts/server_load.py's streaming bench against
# it, stops it, then does the same for the other (the machine is shared: compare within a round).
#   scripts/bench-server-side-by-side.sh GLASS LLAMA_SERVER MODEL [server_load.py bench options]
# Example: scripts/bench-server-side-by-side.sh build/bin/glass ~/llama.cpp/build/bin/llama-server \
#            model.gguf -n 16 --max-tokens 128 -c 1,4,8,16 --ban-token 2
# Environment: NP sequences at once (16; glass -np, llama-server -np), CTX positions per sequence
# (512; llama-server gets -c CTX x NP, its slots share it), THREADS (2), ROUNDS (2), GLASS_ARGS (more
# options for glass serve, e.g. "-ub 512"). A LLAMA_SERVER that is not an executable (e.g. "-") runs
# glass alone.
# The client is build/bin/glass_server_load (src/server/load_bench.cpp: the same requests and table
# at a few microseconds of CPU per token) when it is built beside GLASS, else scripts/server_load.py
# (~0.35 ms of CPU per token on these cores, taken from the server under test); CLIENT=py forces
# the Python one.
# Both get /v1/completions with a plain prompt (no chat template), "ignore_eos": true (llama-server
# honours it, glass ignores it) and whatever --ban-token adds; the tables say how many tokens
# arrived per request.
set -euo pipefail
if [ $# -lt 3 ]; then
  sed -n '2,14p' "$0" >&2
  exit 2
fi
glass=$1
llama=$2
model=$3
shift 3
np=${NP:-16}
ctx=${CTX:-512}
threads=${THREADS:-2}
rounds=${ROUNDS:-2}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/serve-lib.sh
source "$here/serve-lib.sh"
logs=$(mktemp -d)
trap 'stop_server; rm -rf "$logs"' EXIT
if [ ! -x "$llama" ]; then
  echo "llama-server: '$llama' is not an executable; running glass alone" >&2
  llama=""
fi
client=(python3 "$here/server_load.py" bench)
if [ "${CLIENT:-}" != py ] && [ -x "$(dirname "$glass")/glass_server_load" ]; then
  client=("$(dirname "$glass")/glass_server_load")
fi
echo "client: ${client[*]}"
echo "load before: $(cat /proc/loadavg)"
for ((r = 1; r <= rounds; r++)); do
  # shellcheck disable=SC2086 # GLASS_ARGS is a list of options
  start_glass "$glass" "$model" "$logs/glass.log" -np "$np" -c "$ctx" -t "$threads" ${GLASS_ARGS:-}
  "${client[@]}" "$SERVER_URL" --label "glass, round $r" "$@" || true
  stop_server
  if [ -n "$llama" ]; then
    start_llama "$llama" "$model" "$logs/llama.log" -np "$np" -c $((ctx * np)) -t "$threads"
    "${client[@]}" "$SERVER_URL" --label "llama-server, round $r" "$@" || true
    stop_server
  fi
done
echo "load after: $(cat /proc/loadavg)"
