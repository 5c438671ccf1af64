#!/usr/bin/env python3
"""Streaming load against an OpenAI-compatible server (glass serve, llama.cpp's llama-server).

  server_load.py bench URL [-n 16] [--max-tokens 128] [-c 1,4,8,16]   one markdown table row per level
  server_load.py soak URL --seconds 60 [--streams 64] [--disconnect 0.3]

Python's standard library only. Requests go to /v1/completions with a plain prompt (no chat template
needed), "stream": true and "stream_options": {"include_usage": true}. The tokens counted are the
usage's completion_tokens when the server sends them, else the content chunks received. To keep
replies running to max_tokens it sends "ignore_eos": true (llama-server honours it; glass ignores
unknown fields) and, with --ban-token ID, a logit_bias of -100 for that token (glass's way to the
same end: the model's end-of-generation ids, e.g. 2 for stories260K and llama 2). The table says how
many tokens arrived, so a reply that ended early shows. TTFT is from sending the request to its
first content chunk; inter-token latency the gaps between content chunks as this client reads
them (pooled over the level's requests; chunks that arrive together, because the server outruns
the client or batches its writes, show as gaps near 0). Every request has a socket timeout and
every level / soak a deadline.
"""
import argparse
import http.client
import json
import random
import statistics
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor


def percentile(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


class Target:
    def __init__(self, url, api_key, model, timeout):
        u = urllib.parse.urlparse(url)
        if u.scheme != "http" or not u.hostname:
            raise SystemExit(f"server_load: want an http://host:port URL, got {url!r}")
        self.host = u.hostname
        self.port = u.port or 80
        self.api_key = api_key
        self.model = model
        self.timeout = timeout

    def connect(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def headers(self):
        h = {"Content-Type": "application/json"}
        if self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        return h

    def get(self, path):
        c = self.connect()
        try:
            c.request("GET", path, headers=self.headers())
            r = c.getresponse()
            return r.status, r.read().decode("utf-8", "replace")
        finally:
            c.close()


def body(args, seed):
    b = {
        "prompt": args.prompt,
        "max_tokens": args.max_tokens,
        "temperature": args.temperature,
        "seed": seed,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
    }
    if args.model:
        b["model"] = args.model
    if args.ban_token:
        b["logit_bias"] = {str(t): -100 for t in args.ban_token}
    return json.dumps(b)


def stream_one(target, args, seed, hang_up_after=None):
    """One streamed completion. hang_up_after=k: close the connection after k content chunks.
    Returns a dict: ok, tokens, ttft (s), gaps (s), error, hung_up."""
    out = {"ok": False, "tokens": 0, "ttft": None, "gaps": [], "error": None, "hung_up": False}
    conn = target.connect()
    try:
        t0 = time.perf_counter()
        conn.request("POST", "/v1/completions", body=body(args, seed), headers=target.headers())
        resp = conn.getresponse()
        if resp.status != 200:
            out["error"] = f"HTTP {resp.status}: {resp.read(300).decode('utf-8', 'replace')}"
            return out
        chunks = 0
        usage = None
        last = None
        done = False
        while True:
            line = resp.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data: "):
                continue
            data = line[6:]
            if data == b"[DONE]":
                done = True
                break
            ev = json.loads(data)
            if ev.get("usage"):
                usage = ev["usage"]
            text = "".join((c.get("text") or "") for c in ev.get("choices", []))
            if not text:
                continue
            now = time.perf_counter()
            if last is None:
                out["ttft"] = now - t0
            else:
                out["gaps"].append(now - last)
            last = now
            chunks += 1
            if hang_up_after is not None and chunks >= hang_up_after:
                out["hung_up"] = True
                out["tokens"] = chunks
                return out
        out["tokens"] = usage["completion_tokens"] if usage and "completion_tokens" in usage else chunks
        out["ok"] = done
        if not done:
            out["error"] = "the stream ended without [DONE]"
        return out
    except (OSError, http.client.HTTPException, ValueError) as e:
        out["error"] = f"{type(e).__name__}: {e}"
        return out
    finally:
        conn.close()  # a hang-up: the server sees the connection close mid-stream


def metrics(target):
    status, text = target.get("/metrics")
    if status != 200:
        return None
    m = {}
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        name, value = line.rsplit(" ", 1)
        try:
            m[name] = float(value)
        except ValueError:
            pass
    return m


def bench(args):
    target = Target(args.url, args.api_key, args.model, args.timeout)
    levels = [int(x) for x in args.concurrency.split(",") if x]
    # One short request first, so that no level pays for a cold start.
    stream_one(target, argparse.Namespace(**{**vars(args), "max_tokens": 4}), 0)
    rows = []
    for level in levels:
        deadline = time.monotonic() + args.level_seconds
        results = []
        lock = threading.Lock()
        seeds = iter(range(1, args.requests + 1))

        def worker():
            while time.monotonic() < deadline:
                with lock:
                    seed = next(seeds, None)
                if seed is None:
                    return
                r = stream_one(target, args, seed)
                with lock:
                    results.append(r)

        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=level) as pool:
            for _ in range(level):
                pool.submit(worker)
        wall = time.perf_counter() - t0
        ok = [r for r in results if r["ok"]]
        tokens = sum(r["tokens"] for r in ok)
        ttft = [r["ttft"] for r in ok if r["ttft"] is not None]
        gaps = [g for r in ok for g in r["gaps"]]
        errors = [r["error"] for r in results if r["error"]]
        rows.append((level, len(results), len(ok), tokens, wall, tokens / wall if wall > 0 else 0.0,
                     percentile(ttft, 50) * 1e3, percentile(ttft, 95) * 1e3,
                     percentile(gaps, 50) * 1e3, percentile(gaps, 95) * 1e3))
        if errors:
            print(f"level {level}: {len(errors)} failed, first: {errors[0]}", file=sys.stderr)
        if len(results) < args.requests:
            print(f"level {level}: {args.level_seconds} s deadline hit after {len(results)} of "
                  f"{args.requests} requests", file=sys.stderr)
    label = f" ({args.label})" if args.label else ""
    print(f"\n{args.requests} streamed requests x {args.max_tokens} tokens per level{label}, {args.url}\n")
    print("| concurrency | requests | ok | tokens | tokens/request | wall s | gen tok/s | TTFT p50 ms | "
          "TTFT p95 ms | ITL p50 ms | ITL p95 ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (level, n, ok, tokens, wall, tps, t50, t95, i50, i95) in rows:
        per = tokens / ok if ok else 0
        print(f"| {level} | {n} | {ok} | {tokens} | {per:.1f} | {wall:.2f} | {tps:.1f} | {t50:.1f} | "
              f"{t95:.1f} | {i50:.2f} | {i95:.2f} |")
    return 0 if all(r[2] == r[1] and r[1] > 0 for r in rows) else 1


def soak(args):
    target = Target(args.url, args.api_key, args.model, args.timeout)
    rng = random.Random(args.seed)
    lock = threading.Lock()
    counts = {"requests": 0, "completed": 0, "hung_up": 0, "failed": 0, "tokens": 0}
    errors = []
    deadline = time.monotonic() + args.seconds

    def worker(i):
        while time.monotonic() < deadline:
            with lock:
                seed = rng.randrange(1 << 30)
                hang = rng.random() < args.disconnect
                after = rng.randint(1, max(1, args.max_tokens // 2)) if hang else None
            r = stream_one(target, args, seed, hang_up_after=after)
            with lock:
                counts["requests"] += 1
                counts["tokens"] += r["tokens"]
                if r["hung_up"]:
                    counts["hung_up"] += 1
                elif r["ok"]:
                    counts["completed"] += 1
                else:
                    counts["failed"] += 1
                    if len(errors) < 5:
                        errors.append(r["error"])

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.streams) as pool:
        for i in range(args.streams):
            pool.submit(worker, i)
    wall = time.perf_counter() - t0
    print(f"soak: {args.streams} streams for {wall:.1f} s: {counts['requests']} requests, "
          f"{counts['completed']} completed, {counts['hung_up']} hung up mid-stream, "
          f"{counts['failed']} failed, {counts['tokens']} tokens received")
    for e in errors:
        print(f"  failure: {e}")
    # The server must come back to idle: nothing running or queued, no KV block held.
    idle = None
    end = time.monotonic() + args.settle_seconds
    m = None
    while time.monotonic() < end:
        m = metrics(target)
        if m and m.get("glass_running_sequences") == 0 and m.get("glass_queue_depth") == 0 and \
                m.get("glass_kv_blocks_used") == 0:
            idle = m
            break
        time.sleep(0.1)
    if m is None:
        print("soak: /metrics unreadable (not a glass server?)")
        return 1
    show = ["glass_running_sequences", "glass_queue_depth", "glass_kv_blocks_used", "glass_kv_blocks_free",
            "glass_kv_blocks_cached", "glass_requests_cancelled_total", "glass_generation_requests_total",
            "glass_preemptions_total"]
    print("metrics after: " + ", ".join(f"{k} {int(m.get(k, -1))}" for k in show))
    if idle is None:
        print(f"soak: FAILED: not idle {args.settle_seconds} s after the load ended")
        return 1
    if counts["failed"] > 0:
        print("soak: FAILED: requests failed")
        return 1
    print("soak: ok: 0 running, 0 queued, 0 KV blocks used")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    for name in ("bench", "soak"):
        p = sub.add_parser(name)
        p.add_argument("url", help="the server, e.g. http://127.0.0.1:8080")
        p.add_argument("--api-key", default="")
        p.add_argument("--model", default="", help="the request's model field (default: none)")
        p.add_argument("--prompt", default="Once upon a time")
        p.add_argument("--max-tokens", type=int, default=128 if name == "bench" else 64)
        p.add_argument("--temperature", type=float, default=0.8)
        p.add_argument("--ban-token", type=int, action="append", default=[],
                       help="token id given logit_bias -100 (repeatable): the model's end-of-generation ids")
        p.add_argument("--timeout", type=float, default=120, help="socket timeout per request, seconds")
    b = sub.choices["bench"]
    b.add_argument("-n", "--requests", type=int, default=16, help="requests per concurrency level")
    b.add_argument("-c", "--concurrency", default="1,4,8,16")
    b.add_argument("--level-seconds", type=float, default=300, help="deadline per level")
    b.add_argument("--label", default="")
    s = sub.choices["soak"]
    s.add_argument("--seconds", type=float, default=60)
    s.add_argument("--streams", type=int, default=64)
    s.add_argument("--disconnect", type=float, default=0.3, help="share of requests hung up mid-stream")
    s.add_argument("--settle-seconds", type=float, default=30, help="how long the server may take to go idle")
    s.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    return bench(args) if args.mode == "bench" else soak(args)


if __name__ == "__main__":
    sys.exit(main())
