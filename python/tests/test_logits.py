"""Logits from Python against the glass command (bit for bit) and against llama.cpp's references."""
import json
import subprocess

import numpy as np
import pytest

import glass
from conftest import MODEL, THREADS

IDS = [1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338]


def cli_logits(glass_bin, tmp_path, ids, mode):
    out = tmp_path / f"{mode.replace(':', '_')}.npy"
    subprocess.run([glass_bin, "logits", "-m", str(MODEL), "-t", str(THREADS), "--tokens",
                    ",".join(map(str, ids)), "--mode", mode, "-o", str(out)],
                   check=True, capture_output=True)
    return np.load(out)


def python_logits(ids, chunk):
    # As `glass logits` loads: room for the sequence, one prefill call per chunk.
    m = glass.load(MODEL, threads=THREADS, min_ctx=len(ids), n_batch=chunk)
    s = m.session()
    rows = [s.eval(ids[i:i + chunk], all_logits=True) for i in range(0, len(ids), chunk)]
    return np.concatenate(rows)


@pytest.mark.parametrize("mode,chunk", [("prefill", len(IDS)), ("decode", 1), ("chunked:5", 5)])
def test_logits_equal_the_glass_command_bit_for_bit(glass_bin, tmp_path, mode, chunk):
    want = cli_logits(glass_bin, tmp_path, IDS, mode)
    got = python_logits(IDS, chunk)
    assert got.dtype == np.float32 and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


# The conformance suite's measures (runtime/verify.cpp) and bars (tests/conformance/references.cpp:
# the F32 and F16 rows of verify::thresholds).
BARS = {"f32": (1e-4, 1e-5, 0.99999, 1.0), "f16": (2e-3, 2e-4, 0.9999, 0.95)}


def check_against(ref_json, weights):
    doc = json.loads(ref_json.read_text())
    fixtures = ref_json.parents[2]
    ids = doc["token_ids"]
    want = np.load(ref_json.parent / doc["file"]).astype(np.float64)
    m = glass.load(fixtures / doc["model"], threads=THREADS, min_ctx=len(ids), n_batch=len(ids))
    max_abs, mean_abs, min_pearson, min_top1 = BARS[weights]
    for chunk in (len(ids), 1, 7):  # prefill, decode, chunked:7 as the conformance suite runs
        s = m.session()
        got = np.concatenate([s.eval(ids[i:i + chunk], all_logits=True)
                              for i in range(0, len(ids), chunk)]).astype(np.float64)
        d = np.abs(got - want)
        assert d.max() <= max_abs, (ref_json.name, chunk, d.max())
        assert d.mean() <= mean_abs
        g = got - got.mean(axis=1, keepdims=True)
        w = want - want.mean(axis=1, keepdims=True)
        pearson = (g * w).sum(axis=1) / np.sqrt((g * g).sum(axis=1) * (w * w).sum(axis=1))
        assert pearson.min() >= min_pearson
        assert (got.argmax(axis=1) == want.argmax(axis=1)).mean() >= min_top1


def test_conformance_stories260k(fixtures_dir):
    check_against(fixtures_dir / "reference" / "stories260K" / "logits.json", "f32")


def test_conformance_synthetic_llama_gqa_f16(fixtures_dir):
    check_against(fixtures_dir / "reference" / "synthetic" / "llama-gqa-f16.json", "f16")


def test_greedy_continuation_equals_llama_cpp(model, fixtures_dir):
    doc = json.loads((fixtures_dir / "reference" / "stories260K" / "greedy.json").read_text())
    for case in doc["cases"][:2]:
        n = min(case["n_new_tokens_requested"], model.info.n_ctx - len(case["prompt_token_ids"]))
        r = model.generate(case["prompt_token_ids"], max_tokens=n, temperature=0,
                           stop_at_end_of_generation=True)
        assert r.tokens == case["continuation_token_ids"][:len(r.tokens)]
        assert len(r.tokens) == n or r.finish_reason == "stop"
