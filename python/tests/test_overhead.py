"""Memory stays flat over many calls; the Python layer's cost per call and per token is measured
(printed, not asserted: pytest -s shows it)."""
import json
import os
import subprocess
import time

import glass
from conftest import MODEL, THREADS


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_a_thousand_short_generations_keep_rss_flat(model):
    for i in range(200):  # warm-up: session pool, allocator arenas, interned strings
        model.generate("Once upon a time", max_tokens=1 + i % 2, temperature=0)
    before = rss_bytes()
    for i in range(1000):
        r = model.generate("Once upon a time", max_tokens=1 + i % 2, temperature=0.8, seed=i)
        assert len(r.tokens) == 1 + i % 2
    s = model.session()
    for i in range(200):
        s.reset()
        s.eval([1, 403, 407], all_logits=True)
    grown = rss_bytes() - before
    assert grown < 2 << 20, f"RSS grew by {grown} bytes over 1000 generate calls"




def run_json(glass_bin, n):
    out = subprocess.run([glass_bin, "run", "-m", str(MODEL), "-t", str(THREADS), "-p", "Once upon a time",
                          "-n", str(n), "--temp", "0", "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_measure_python_overhead(model, glass_bin, capsys):
    """Python generate against the glass command on the same model, prompt and threads. Best of
    several runs each (the machine may be shared)."""
    n = 64
    prompt = model.tokenize("Once upon a time")
    model.generate(prompt, max_tokens=n, temperature=0)
    runs = []
    for _ in range(20):
        t0 = time.perf_counter()
        r64 = model.generate(prompt, max_tokens=n, temperature=0)
        wall = (time.perf_counter() - t0) * 1e3
        runs.append((wall, r64.timings.prompt_ms + r64.timings.decode_ms, r64.timings.decode_ms, len(r64.tokens)))
    wall, inner, decode, tokens = min(runs)
    calls = []
    for _ in range(500):
        t0 = time.perf_counter()
        r = model.generate(prompt, max_tokens=1, temperature=0)
        calls.append(((time.perf_counter() - t0) * 1e6, (r.timings.prompt_ms + r.timings.decode_ms) * 1e3))
    call_wall, call_inner = sorted(calls)[len(calls) // 2]
    cpp = max((run_json(glass_bin, n) for _ in range(5)), key=lambda j: j["timings"]["decode_tps"])
    bench = subprocess.run([glass_bin, "bench", "-m", str(MODEL), "-p", "0", "-n", str(n), "-r", "5", "-t",
                            str(THREADS), "-o", "json"], check=True, capture_output=True, text=True).stdout
    assert cpp["tokens"] == r64.tokens  # the same work on both sides
    py_decode_tps = tokens / (decode / 1e3)  # as `glass run` counts it
    line = (f"glass python overhead ({tokens}-token greedy generate, best of 20): {wall:.3f} ms wall, "
            f"{inner:.3f} ms inside glass::generate ({(wall - inner) / tokens * 1e3:.2f} us per token outside "
            f"it, {(wall - inner) / wall * 100:.1f}%); decode {py_decode_tps:.0f} tok/s from Python vs "
            f"{cpp['timings']['decode_tps']:.0f} tok/s from `glass run` (glass bench tg{n}: "
            f"{json.loads(bench)[0]['avg_ts']:.0f} tok/s); a 1-token generate call: median {call_wall:.1f} us "
            f"wall, {call_wall - call_inner:.1f} us of it outside glass::generate")
    with capsys.disabled():  # shown in ctest's log too
        print("\n" + line)
