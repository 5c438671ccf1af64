#!/usr/bin/env bash
# Streaming load against a running OpenAI-compatible server (glass serve or llama-server): N
# streamed /v1/completions requests x M tokens at each concurrency level, then a markdown table of
# aggregate generated tokens/s, TTFT p50/p95 and inter-token latency p50/p95 per level.
#   scripts/bench-server.sh URL [-n 16] [--max-tokens 128] [-c 1,4,8,16] [--ban-token ID] [--api-key K]
# (all of scripts/server_load.py's bench options; --ban-token 2 keeps stories260K / llama 2 replies
# running to --max-tokens on glass, which has no ignore_eos). WRK_SECONDS=S (environment) adds S
# seconds of wrk at 16 connections of short non-streamed completions (HTTP requests/s, keep-alive).
set -euo pipefail
if [ $# -lt 1 ]; then
  sed -n '2,8p' "$0" >&2
  exit 2
fi
url=${1%/}
shift
status=0
python3 "$(dirname "$0")/server_load.py" bench "$url" "$@" || status=$?
if [ -n "${WRK_SECONDS:-}" ]; then
  if ! command -v wrk >/dev/null; then
    echo "wrk not installed (scripts/install-deps.sh installs it); no requests/s line" >&2
  else
    lua=$(mktemp --suffix=.lua)
    trap 'rm -f "$lua"' EXIT
    cat >"$lua" <<'LUA'
wrk.method = "POST"
wrk.path = "/v1/completions"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}'
LUA
    echo
    echo "wrk: non-streamed completions of 8 tokens, 16 connections, ${WRK_SECONDS} s"
    wrk -t 2 -c 16 -d "${WRK_SECONDS}s" --timeout 30s -s "$lua" "$url" | grep -E "Requests/sec|Latency|requests in|Non-2xx"
  fi
fi
exit "$status"
