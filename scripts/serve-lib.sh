# Sourced by the server benchmark scripts (bench-server-side-by-side.sh, soak-server.sh): start a
# server on a free loopback port and wait for its /health, read its RSS, stop it. Every wait is
# bounded.

# A port nothing listens on now (for servers that cannot take --port 0 and say which they got).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_health URL SECONDS: until GET URL/health answers 200 (glass: 503 while loading).
wait_health() {
  python3 - "$1" "$2" <<'PY'
import sys, time, urllib.request
url, end = sys.argv[1], time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    try:
        with urllib.request.urlopen(url + "/health", timeout=2) as r:
            if r.status == 200:
                sys.exit(0)
    except Exception:
        pass
    time.sleep(0.2)
sys.exit(1)
PY
}

# start_glass GLASS MODEL LOG [serve options...]: sets SERVER_PID and SERVER_URL. --port 0 lets
# glass bind a free port itself; its "listening on" line says which.
start_glass() {
  local bin=$1 model=$2 log=$3 port=""
  shift 3
  "$bin" serve -m "$model" --host 127.0.0.1 --port 0 "$@" 2>"$log" &
  SERVER_PID=$!
  for _ in $(seq 300); do
    port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9][0-9]*\).*|\1|p' "$log" | head -n 1)
    [ -n "$port" ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    echo "glass serve did not start:" >&2
    cat "$log" >&2
    return 1
  fi
  SERVER_URL=http://127.0.0.1:$port
  if ! wait_health "$SERVER_URL" 300; then
    echo "glass serve at $SERVER_URL not healthy in 300 s:" >&2
    cat "$log" >&2
    return 1
  fi
}

# start_llama LLAMA_SERVER MODEL LOG [options...]: the same for llama.cpp's llama-server.
start_llama() {
  local bin=$1 model=$2 log=$3 port
  shift 3
  port=$(free_port)
  "$bin" -m "$model" --host 127.0.0.1 --port "$port" "$@" >"$log" 2>&1 &
  SERVER_PID=$!
  SERVER_URL=http://127.0.0.1:$port
  if ! wait_health "$SERVER_URL" 300; then
    echo "llama-server at $SERVER_URL not healthy in 300 s:" >&2
    tail -n 30 "$log" >&2
    return 1
  fi
}

# stop_server: SIGTERM, up to 30 s to exit, then SIGKILL. Sets SERVER_EXIT to its exit status.
stop_server() {
  SERVER_EXIT=""
  [ -n "${SERVER_PID:-}" ] || return 0
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  for _ in $(seq 300); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$SERVER_PID" 2>/dev/null || true
  SERVER_EXIT=0
  wait "$SERVER_PID" 2>/dev/null || SERVER_EXIT=$?
  SERVER_PID=""
}

# rss_mib PID: resident memory in MiB.
rss_mib() {
  awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo "?"
}
