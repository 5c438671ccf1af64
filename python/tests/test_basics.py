"""Loading, model info, tokens, sessions and the exception hierarchy."""
import threading

import numpy as np
import pytest

import glass
from conftest import MODEL, THREADS


def test_info_and_tokens(model):
    info = model.info
    assert info.architecture == "llama"
    assert info.vocab_size == model.vocab_size == 512
    assert info.n_layers == 5 and info.n_ctx > 0
    # 5 layers of K and V, 4 KV heads of 8, f32 cache (the default): 1280 bytes a pool row.
    assert info.kv_bytes_per_row == 5 * 2 * 4 * 8 * 4 == info.as_dict()["kv_bytes_per_row"]
    assert info.as_dict()["architecture"] == "llama"
    ids = model.tokenize("Once upon a time")
    assert ids == [1, 403, 407, 261, 378]  # BOS, as the fixture's llama.cpp tokenization
    arr = model.tokenize("Once upon a time", as_array=True)
    assert arr.dtype == np.int32 and arr.tolist() == ids
    assert model.tokenize("Once upon a time", add_special=False) == ids[1:]
    assert model.detokenize(ids[1:]).strip() == "Once upon a time"
    assert model.detokenize(arr[1:]) == model.detokenize(ids[1:])
    assert isinstance(model.token_to_piece(403), bytes)
    assert glass.load(MODEL, threads=THREADS).plans_compiled == 2  # prefill and decode, at load


def test_session_eval_shapes_and_state(model):
    s = model.session()
    ids = model.tokenize("Once upon a time")
    last = s.eval(ids)
    assert last.shape == (512,) and last.dtype == np.float32
    assert s.n_past == len(ids) and s.tokens == ids
    np.testing.assert_array_equal(s.logits, last)
    # A copy: changing the array does not touch the session's logits.
    last[:] = 0
    assert np.any(s.logits != 0)
    s.truncate(2)
    assert s.n_past == 2 and s.tokens == ids[:2]
    s.reset()
    assert s.n_past == 0
    every = s.eval(ids, all_logits=True)
    assert every.shape == (len(ids), 512)
    np.testing.assert_array_equal(every[-1], s.logits)
    # One token at a time through the cache: the same last row as the prefill, to f32 rounding.
    t = model.session()
    for i in ids:
        row = t.eval([i])
    np.testing.assert_allclose(row, every[-1], atol=1e-4)
    assert s.stats["prefix_tokens_recomputed"] == 0


def test_bad_path_raises_a_glass_error_naming_it(tmp_path):
    missing = tmp_path / "no-such-model.gguf"
    with pytest.raises(glass.Error) as e:
        glass.load(missing)
    assert type(e.value) is not glass.Error  # a subclass per error code
    assert str(missing) in str(e.value)
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all")
    with pytest.raises(glass.InvalidFileError) as e:
        glass.load(bad)
    assert str(bad) in str(e.value) or "gguf" in str(e.value)
    assert e.value.code == "invalid_file"


def test_error_kinds(model):
    with pytest.raises(glass.InvalidArgumentError) as e:
        model.session().eval([100000])
    assert isinstance(e.value, ValueError) and "100000" in str(e.value)
    with pytest.raises(glass.InvalidArgumentError):
        model.detokenize([-1])
    with pytest.raises(glass.Error) as e:
        glass.load(MODEL, backend="no-such-backend")
    assert "no-such-backend" in str(e.value)
    with pytest.raises(glass.InvalidArgumentError):
        glass.load(MODEL, cache_type="q8")
    s = model.session()
    with pytest.raises(glass.CapacityExceededError):
        s.eval([1] * (model.info.n_ctx + 1))
    with pytest.raises(glass.InvalidArgumentError):
        model.generate("x", top_logprobs=3)  # top_logprobs without logprobs
    assert issubclass(glass.IoError, OSError)


def test_a_session_serves_one_thread_at_a_time(model):
    s = model.session()
    stream = s.generate("Once upon a time", max_tokens=64, temperature=0, stream=True)
    with pytest.raises(RuntimeError, match="in use"):
        s.eval([1])
    stream.close()
    s.eval([1])  # free again


def test_models_are_shared_between_threads():
    m = glass.load(MODEL, threads=THREADS)
    results = []
    threads = [threading.Thread(target=lambda: results.append(m.tokenize("Lily"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(r == results[0] for r in results)


def test_decode_strategy_is_a_load_option():
    spread = glass.load(MODEL, threads=1, decode_strategy="spread")
    assert "avx512" not in spread.info.backend or "spread decode" in spread.info.backend
    with pytest.raises(glass.InvalidArgumentError) as e:
        glass.load(MODEL, threads=1, decode_strategy="diagonal")
    assert "decode_strategy: unknown decode strategy 'diagonal'" in str(e.value)


def test_sessions_choose_their_own_cache(model):
    ids = model.tokenize("Once upon a time there was")
    plain = model.session().eval(ids)
    # A smaller pool in smaller blocks: another shape of the same model, the same logits bit for bit.
    small = model.session(kv_size=64, kv_block_size=4, n_seq_max=2)
    np.testing.assert_array_equal(small.eval(ids), plain)
    compiled = model.plans_compiled
    again = model.session(kv_size=64, kv_block_size=4, n_seq_max=2)  # that shape's plans are kept
    np.testing.assert_array_equal(again.eval(ids), plain)
    assert model.plans_compiled == compiled
    half = model.session(cache_type="f16").eval(ids)
    assert np.max(np.abs(half - plain)) < 0.05
    with pytest.raises(ValueError, match="cache_type"):
        model.session(cache_type="q8")
    with pytest.raises(glass.InvalidArgumentError, match="kv_size"):
        model.session(kv_size=-5)
