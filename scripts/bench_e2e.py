#!/usr/bin/env python3
"""One prompt end to end through `glass run` and llama.cpp's llama-completion, alternating, on the same
file: time to first token (from starting the process to the first byte of generated text on stdout,
so the load counts), wall time and peak RSS (the child's ru_maxrss).

  scripts/bench_e2e.py GLASS LLAMA_COMPLETION PROMPT_FILE MODEL... [-n 128] [-t 2] [-r 2]

Both get the same prompt file, -n, -t, greedy sampling and --ignore-eos, at their default context
and batch; llama-completion with -no-cnv --no-display-prompt so that its first output byte is the
first generated one. Python's standard library only; every run has a timeout.
"""
import argparse
import os
import resource
import subprocess
import sys
import time


def run_one(cmd, timeout):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    first = None
    n = 0
    try:
        while True:
            b = p.stdout.read1(65536) if hasattr(p.stdout, "read1") else p.stdout.read(1)
            if not b:
                break
            if first is None:
                first = time.perf_counter() - t0
            n += len(b)
            if time.perf_counter() - t0 > timeout:
                p.kill()
                raise SystemExit(f"bench_e2e: {cmd[0]} ran past {timeout} s")
        rc = p.wait(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if rc != 0:
        raise SystemExit(f"bench_e2e: {' '.join(cmd)} exited {rc}")
    rss = after / 1024.0  # this interpreter runs one command: its children's peak is that run's
    return first if first is not None else float("nan"), wall, rss, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("glass")
    ap.add_argument("llama")
    ap.add_argument("prompt")
    ap.add_argument("models", nargs="+")
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-t", type=int, default=2)
    ap.add_argument("-r", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=600)
    a = ap.parse_args()
    print(f"load before: {open('/proc/loadavg').read().strip()}", flush=True)
    print("| file | tool | run | TTFT ms | wall s | peak RSS MiB | stdout bytes |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for m in a.models:
        name = os.path.basename(m)
        for r in range(a.r):
            cmds = {
                "glass": [a.glass, "run", "-m", m, "-f", a.prompt, "-n", str(a.n), "-t", str(a.t), "--temp", "0",
                          "--ignore-eos"],
                "llama-completion": [a.llama, "-m", m, "-f", a.prompt, "-n", str(a.n), "-t", str(a.t), "--temp", "0",
                                     "--ignore-eos", "-no-cnv", "--no-display-prompt"],
            }
            order = ["glass", "llama-completion"] if r % 2 == 0 else ["llama-completion", "glass"]
            for tool in order:
                # A fresh interpreter per run, so ru_maxrss is that run's own peak.
                out = subprocess.run([sys.executable, __file__, "--one", str(a.timeout), "--"] + cmds[tool],
                                     capture_output=True, text=True, check=True).stdout.split()
                ttft, wall, rss, n = float(out[0]), float(out[1]), out[2], int(out[3])
                print(f"| {name} | {tool} | {r + 1} | {ttft * 1e3:.0f} | {wall:.2f} | {rss} | {n} |", flush=True)
    print(f"load after: {open('/proc/loadavg').read().strip()}")


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "--one":
        ttft, wall, rss, n = run_one(sys.argv[4:], float(sys.argv[2]))
        print(ttft, wall, f"{rss:.1f}", n)
    else:
        main()
