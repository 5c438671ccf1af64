#!/usr/bin/env bash
# A bounded soak of glass serve: 64 concurrent streamed requests for SECONDS (default 60), ~30% of
# them hung up mid-stream at a random chunk, then asserts that /metrics shows the server idle
# (0 running, 0 queued, 0 KV blocks used) and reports the server's RSS idle, after a warm-up and
# after the soak (growth after the warm-up would be a leak).
#   scripts/soak-server.sh URL_OR_MODEL [SECONDS]
# A URL soaks a running server (its RSS is read when its PID can be found from the port with ss);
# a MODEL path starts $GLASS (default build-test/bin/glass) serve on a free loopback port with
# -np $NP (16) -c $CTX (512) -t $THREADS (2), and stops it after with SIGTERM (exit 0 expected).
# SOAK_ARGS (environment) adds scripts/server_load.py soak options, e.g. "--ban-token 2 --streams 32".
set -euo pipefail
if [ $# -lt 1 ]; then
  sed -n '2,11p' "$0" >&2
  exit 2
fi
target=$1
seconds=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
read -r -a soak_args <<<"${SOAK_ARGS:-}"
# shellcheck source=scripts/serve-lib.sh
source "$here/serve-lib.sh"
logs=$(mktemp -d)
trap 'stop_server; rm -rf "$logs"' EXIT
started=0
if [[ $target == http://* ]]; then
  url=${target%/}
  port=${url##*:}
  pid=$(ss -ltnpH "sport = :$port" 2>/dev/null | sed -n 's/.*pid=\([0-9][0-9]*\).*/\1/p' | head -n 1)
else
  start_glass "${GLASS:-$here/../build-test/bin/glass}" "$target" "$logs/glass.log" \
    -np "${NP:-16}" -c "${CTX:-512}" -t "${THREADS:-2}"
  url=$SERVER_URL
  pid=$SERVER_PID
  started=1
fi
rss() { if [ -n "$pid" ]; then rss_mib "$pid"; else echo "?"; fi; }
echo "soaking $url for $seconds s${pid:+ (server pid $pid)}"
rss_idle=$(rss)
# Warm-up: every plan compiled, the KV pool and the HTTP threads touched, before the baseline.
python3 "$here/server_load.py" soak "$url" --seconds 5 --streams 64 --disconnect 0.3 "${soak_args[@]}" >/dev/null || true
rss_warm=$(rss)
status=0
python3 "$here/server_load.py" soak "$url" --seconds "$seconds" --streams 64 --disconnect 0.3 "${soak_args[@]}" ||
  status=$?
rss_after=$(rss)
echo "server RSS: idle $rss_idle MiB, after warm-up $rss_warm MiB, after the soak $rss_after MiB"
if [ "$started" = 1 ]; then
  stop_server
  echo "glass serve exit status after SIGTERM: $SERVER_EXIT"
  [ "$SERVER_EXIT" = 0 ] || status=1
fi
exit "$status"
