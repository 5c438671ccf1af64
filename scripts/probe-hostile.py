#!/usr/bin/env python3
"""Probes a `glass serve` it starts (loopback only, every loop bounded) with the hostile-client classes
of issue 51 and prints what it measured:

  slow      /health latency while N slow clients (1 byte every 10 s, reconnecting when cut) are open
  bodies    RSS before, at the peak of, and after a storm of large rejected JSON bodies
  gzip      a compressed body's answer and its time
  soak      S streams with random disconnects, with and without 50 slow clients: /health p50/p99
            and generated tokens/s of the streams

  python3 scripts/probe-hostile.py --glass build/bin/glass [--model models/stories260K.gguf]
          [--slow 1000] [--streams 64] [--only slow,bodies,gzip,soak]

Python's standard library only. Raise the descriptor limit first for --slow past ~1000
(`ulimit -n 8192`): each slow client is a socket of this process too.
"""
import argparse
import json
import os
import random
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def health_ms(port, timeout=5.0):
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=timeout) as r:
            r.read()
    except Exception:
        return None
    return (time.perf_counter() - t) * 1000.0


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))] if xs else float("nan")


class SlowClients:
    """N connections that each send a request head one byte every `interval` seconds, reconnecting when
    the server cuts them (as an attacker would)."""

    def __init__(self, port, n, interval=10.0):
        self.port, self.n, self.interval = port, n, interval
        self.stop = threading.Event()
        self.cut = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def connect(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        s.setblocking(False)
        s.send(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        return s

    def run(self):
        socks = [self.connect() for _ in range(self.n)]
        self.ready = True
        while not self.stop.wait(self.interval / 10):
            # Send one byte on a tenth of the sockets each round: each gets one every `interval`.
            for i in random.sample(range(len(socks)), max(1, len(socks) // 10)):
                try:
                    socks[i].send(b"X")
                except OSError:
                    self.cut += 1
                    socks[i].close()
                    try:
                        socks[i] = self.connect()
                    except OSError:
                        pass
        for s in socks:
            s.close()

    def __enter__(self):
        self.ready = False
        self.thread.start()
        for _ in range(600):
            if self.ready:
                break
            time.sleep(0.05)
        return self

    def __exit__(self, *a):
        self.stop.set()
        self.thread.join(timeout=30)


def stream(port, max_tokens, disconnect_after=None):
    """One streamed completion; returns the number of content events read."""
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": max_tokens, "stream": True,
                       "temperature": 1.0}).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
    got, buf = 0, b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
        got = buf.count(b'"text"')
        if disconnect_after is not None and got >= disconnect_after:
            break
        if b"[DONE]" in buf:
            break
    s.close()
    return got


def soak(port, streams, max_tokens, seconds):
    end = time.time() + seconds
    tokens = [0]
    lock = threading.Lock()

    def worker():
        while time.time() < end:
            cut = random.randint(1, max_tokens // 2) if random.random() < 0.3 else None
            n = stream(port, max_tokens, cut)
            with lock:
                tokens[0] += n

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(streams)]
    t0 = time.time()
    for t in threads:
        t.start()
    lat = []
    while time.time() < end:
        h = health_ms(port)
        lat.append(h if h is not None else 5000.0)
        time.sleep(0.1)
    for t in threads:
        t.join(timeout=120)
    return tokens[0] / (time.time() - t0), lat


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--glass", default="build/bin/glass")
    ap.add_argument("--model", default="models/stories260K.gguf")
    ap.add_argument("--slow", type=int, default=1000)
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--only", default="slow,bodies,gzip,soak")
    a = ap.parse_args()
    only = set(a.only.split(","))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, a.slow + 512)), hard))
    port = free_port()
    proc = subprocess.Popen([a.glass, "serve", "-m", a.model, "--port", str(port), "-t", "1",
                             "--parallel", str(min(a.streams, 64)), "--log-disable"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(300):
            if health_ms(port, 1) is not None and urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/health").status == 200:
                break
            time.sleep(0.1)
        stream(port, 8)
        idle = rss_mib(proc.pid)
        print(f"server pid {proc.pid} on port {port}; idle RSS {idle:.1f} MiB")

        if "slow" in only:
            with SlowClients(port, a.slow) as sc:
                lat = []
                for _ in range(int(a.seconds * 5)):
                    h = health_ms(port)
                    lat.append(h if h is not None else 5000.0)
                    time.sleep(0.2)
                print(f"slow: {a.slow} slow clients; /health over {len(lat)} probes: p50 {pct(lat, 50):.1f} ms, "
                      f"p99 {pct(lat, 99):.1f} ms, max {max(lat):.1f} ms; {sc.cut} cut by the server meanwhile")

        if "bodies" in only:
            before = rss_mib(proc.pid)
            big = json.dumps({"prompt": list(range(7 << 17)), "max_tokens": 1}).encode()  # ~7 MB
            peak = [before]

            def send_big():
                s = socket.create_connection(("127.0.0.1", port), timeout=60)
                s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          b"Content-Length: " + str(len(big)).encode() + b"\r\nConnection: close\r\n\r\n" + big)
                r = s.recv(256)
                s.close()
                return r.split(b" ")[1].decode() if r else "none"

            statuses = []
            for _ in range(4):
                threads = [threading.Thread(target=lambda: statuses.append(send_big())) for _ in range(8)]
                for t in threads:
                    t.start()
                for t in threads:
                    while t.is_alive():
                        peak[0] = max(peak[0], rss_mib(proc.pid))
                        t.join(0.02)
            time.sleep(2)
            after = rss_mib(proc.pid)
            print(f"bodies: 32 bodies of {len(big) / 1e6:.1f} MB (8 at a time), statuses {sorted(set(statuses))}: "
                  f"RSS {before:.1f} -> peak {peak[0]:.1f} -> {after:.1f} MiB 2 s later "
                  f"({100 * (after - idle) / idle:+.1f}% of idle)")

        if "gzip" in only:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            t = time.perf_counter()
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Content-Encoding: gzip\r\nContent-Length: 4000000\r\n\r\n" + b"\x1f\x8b" + b"\0" * 65536)
            r = s.recv(256)
            s.close()
            print(f"gzip: answered {r.split(b' ')[1].decode() if r else 'nothing'} in "
                  f"{(time.perf_counter() - t) * 1000:.1f} ms")

        if "soak" in only:
            base_tps, base_lat = soak(port, a.streams, 64, a.seconds)
            time.sleep(2)
            after_first = rss_mib(proc.pid)
            with SlowClients(port, 50, interval=4.5):
                slow_tps, slow_lat = soak(port, a.streams, 64, a.seconds)
            print(f"soak: {a.streams} streams, 30% cut early, {a.seconds:.0f} s each: "
                  f"alone {base_tps:.0f} tok/s, /health p50 {pct(base_lat, 50):.1f} p99 {pct(base_lat, 99):.1f} ms; "
                  f"with 50 slow clients {slow_tps:.0f} tok/s ({100 * (slow_tps / base_tps - 1):+.1f}%), "
                  f"/health p50 {pct(slow_lat, 50):.1f} p99 {pct(slow_lat, 99):.1f} ms")
            time.sleep(2)
            print(f"soak: RSS after the first soak {after_first:.1f} MiB, after the second {rss_mib(proc.pid):.1f} MiB "
                  f"(idle was {idle:.1f})")
        code = proc.poll()
        print("server still running" if code is None else f"server exited {code}")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    sys.exit(main())
