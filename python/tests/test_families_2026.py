"""The 2026 families from Python: the repository's random-weight files (tests/fixtures/models/
synthetic-2026) give llama.cpp's logits (tests/fixtures/reference/synthetic-2026) through the
session API, and a hybrid's conversation continues from its recurrent state."""
import json

import numpy as np
import pytest

import glass
from conftest import SOURCE, THREADS

FIXTURES = SOURCE / "tests" / "fixtures"


@pytest.mark.parametrize("name", ["smollm3-f32", "lfm2-f32", "qwen35-f32", "qwen35moe-f32", "gemma4-f32",
                                  "gemma4moe-f32", "gptoss-f32"])
def test_logits_match_llama_cpp(name):
    ref = json.loads((FIXTURES / "reference" / "synthetic-2026" / f"{name}.json").read_text())
    # Gemma 4: llama.cpp's CPU GELU is an F16 table; its exact-GELU twin comes from the generator's
    # float64 numpy pass (checked against llama.cpp with the table emulated, see the JSON).
    exact = ref.get("numpy_f64_reference", {}).get("file")
    want = np.load(FIXTURES / "reference" / "synthetic-2026" / (exact or f"{name}.npy"))
    ids = ref["token_ids"]
    m = glass.load(FIXTURES / ref["model"], threads=THREADS, min_ctx=len(ids))
    s = m.session()
    got = np.concatenate([s.eval(ids[:20], all_logits=True), s.eval(ids[20:], all_logits=True)])
    assert got.shape == want.shape
    assert np.abs(got - want).max() < 1e-4


def test_qwen35_session_continues_from_its_recurrent_state():
    m = glass.load(FIXTURES / "models" / "synthetic-2026" / "qwen35-f32.gguf", threads=THREADS, n_ctx=256)
    prompt = [1, 244, 401, 438, 344, 55, 123, 365, 94, 435, 179, 17]
    whole = m.generate(prompt + [80, 70, 161], max_tokens=6, temperature=0)
    s = m.session()
    s.eval(prompt)  # the state after the prompt, kept by the session
    cont = s.generate([80, 70, 161], max_tokens=6, temperature=0)
    assert cont.tokens == whole.tokens
    assert len(whole.tokens) == 6


def test_qwen35_rewinds_anywhere_and_recomputes_from_a_checkpoint():
    ref = json.loads((FIXTURES / "reference" / "synthetic-2026" / "qwen35-f32.json").read_text())
    want = np.load(FIXTURES / "reference" / "synthetic-2026" / "qwen35-f32.npy")
    ids = ref["token_ids"]
    m = glass.load(FIXTURES / ref["model"], threads=THREADS, n_ctx=256)
    s = m.session()
    s.eval(ids[:40])
    for n in (37, 32, 20, 5, 0):  # inside blocks, at one, and back to empty
        s.truncate(n)
        got = s.eval(ids[n:40], all_logits=True)
        assert np.abs(got - want[n:40]).max() < 1e-4, n
