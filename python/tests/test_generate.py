"""Generation: results, streaming, cancellation, Ctrl-C, threads, chat, batches, log probabilities."""
import _thread
import json
import subprocess
import threading

import numpy as np
import pytest

import glass
from conftest import MODEL, THREADS

PROMPT = "Once upon a time"
# A minimal template: stories260K has none.
TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}" \
           "{% if add_generation_prompt %}assistant:{% endif %}"


def test_greedy_result_equals_the_glass_command(model, glass_bin):
    r = model.generate(PROMPT, max_tokens=24, temperature=0)
    out = subprocess.run([glass_bin, "run", "-m", str(MODEL), "-t", str(THREADS), "-p", PROMPT, "-n", "24",
                          "--temp", "0", "--json"], check=True, capture_output=True, text=True).stdout
    want = json.loads(out)
    assert r.tokens == want["tokens"]
    assert r.text == want["text"]
    assert r.finish_reason == want["finish_reason"] == "length"
    assert r.usage == {"prompt_tokens": 5, "completion_tokens": 24, "total_tokens": 29}
    assert r.timings.n_decoded == 24 and r.timings.decode_ms > 0
    assert r.counters["prefix_tokens_recomputed"] == 0


def test_sampling_options_and_stop(model):
    a = model.generate(PROMPT, max_tokens=16, temperature=0.9, seed=7)
    b = model.generate(PROMPT, max_tokens=16, temperature=0.9, seed=7)
    assert a.tokens == b.tokens and a.seed == 7
    r = model.generate(PROMPT, max_tokens=40, temperature=0, stop=["Lily"])
    assert r.finish_reason == "stop" and "Lily" not in r.text
    ids = model.generate(model.tokenize(PROMPT), max_tokens=8, temperature=0)
    assert ids.tokens == model.generate(PROMPT, max_tokens=8, temperature=0).tokens
    assert model.generate(PROMPT, max_tokens=4, seed=None).seed >= 0


def test_streaming_pieces_join_to_the_result(model):
    want = model.generate(PROMPT, max_tokens=40, temperature=0)
    stream = model.generate(PROMPT, max_tokens=40, temperature=0, stream=True)
    assert stream.result is None
    pieces = list(stream)
    assert len(pieces) > 1 and all(isinstance(p, str) for p in pieces)
    assert "".join(pieces) == stream.result.text == want.text == stream.text
    assert stream.result.tokens == want.tokens
    got = []
    r = model.generate(PROMPT, max_tokens=40, temperature=0, on_piece=got.append)
    assert "".join(got) == r.text == want.text


def test_session_streams_continue_the_conversation(model):
    s = model.session()
    first = s.generate(PROMPT, max_tokens=10, temperature=0)
    stream = s.generate(" She", max_tokens=10, temperature=0, stream=True)
    text = "".join(stream)
    assert text == stream.result.text
    # The last token a generation samples is not evaluated (glass::generate's rule): the cache holds
    # the prompt and all but the last token of each reply.
    assert s.n_past == 5 + 9 + len(model.tokenize(" She", add_special=False)) + 9
    assert first.tokens[:9] == s.tokens[5:14]


def test_a_callback_returning_false_cancels(model):
    seen = []

    def on_piece(p):
        seen.append(p)
        return len(seen) < 3

    r = model.generate(PROMPT, max_tokens=60, temperature=0, on_piece=on_piece)
    assert r.finish_reason == "cancelled" and len(seen) == 3
    assert r.text == "".join(seen) and len(r.tokens) < 60


def test_a_stream_closed_early_cancels(model):
    with model.generate(PROMPT, max_tokens=100, temperature=0, stream=True) as stream:
        first = next(stream)
    assert stream.done and stream.result.finish_reason in ("cancelled", "length")
    assert stream.result.text.startswith(first)
    stream.close()  # again: nothing happens
    with pytest.raises(StopIteration):
        next(stream)
    # Dropped without close: the thread is cancelled and joined, the session goes back.
    s = model.session()
    it = s.generate(PROMPT, max_tokens=100, temperature=0, stream=True)
    next(it)
    del it
    assert s.eval([1]).shape == (512,)


def test_keyboard_interrupt_cancels_generation_cleanly(model):
    s = model.session()
    count = []

    def interrupt_once(p):
        count.append(p)
        if len(count) == 2:
            _thread.interrupt_main()  # as Ctrl-C: SIGINT's handler runs at the next check

    with pytest.raises(KeyboardInterrupt):
        s.generate(PROMPT, max_tokens=100, temperature=0, on_piece=interrupt_once)
    assert len(count) == 2  # the generation stopped at the next piece
    n = s.n_past
    assert 5 < n < 105
    r = s.generate(" The", max_tokens=5, temperature=0)  # the session is usable: it continues
    assert len(r.tokens) == 5
    # Model-level generation and batches too.
    count.clear()
    with pytest.raises(KeyboardInterrupt):
        model.generate(PROMPT, max_tokens=100, temperature=0, on_piece=interrupt_once)
    assert model.generate(PROMPT, max_tokens=3, temperature=0).finish_reason == "length"


def test_keyboard_interrupt_while_iterating_a_stream(model):
    stream = model.generate(PROMPT, max_tokens=100, temperature=0, stream=True)
    with pytest.raises(KeyboardInterrupt):
        for i, _ in enumerate(stream):
            if i == 1:
                _thread.interrupt_main()
    stream.close()
    assert stream.done
    assert model.generate(PROMPT, max_tokens=3, temperature=0).finish_reason == "length"


def test_two_threads_generate_at_once_on_two_sessions(model):
    prompts = [PROMPT, "Lily wanted to"]
    want = [model.session().generate(p, max_tokens=48, temperature=0.8, seed=11).tokens for p in prompts]
    for _ in range(3):
        got = [None, None]
        barrier = threading.Barrier(2)

        def run(i, s):
            barrier.wait()
            got[i] = s.generate(prompts[i], max_tokens=48, temperature=0.8, seed=11).tokens

        sessions = [model.session(), model.session()]
        threads = [threading.Thread(target=run, args=(i, sessions[i])) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert got == want
    # model.generate from threads at once: each call gets a session of its own.
    got = [None] * 4
    threads = [threading.Thread(target=lambda i=i: got.__setitem__(
        i, model.generate(prompts[i % 2], max_tokens=48, temperature=0.8, seed=11).tokens)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [want[0], want[1], want[0], want[1]]


def test_generate_batch_equals_one_by_one(model):
    prompts = [PROMPT, "Lily wanted to", model.tokenize("The cat")]
    pieces = {}
    results = model.generate_batch(prompts, max_tokens=20, temperature=0,
                                   on_piece=lambda i, p: pieces.setdefault(i, []).append(p))
    assert len(results) == 3
    for i, (p, r) in enumerate(zip(prompts, results)):
        assert r.tokens == model.generate(p, max_tokens=20, temperature=0).tokens
        assert "".join(pieces[i]) == r.text


def test_chat(model):
    with pytest.raises(glass.Error):
        model.chat([{"role": "user", "content": "Hi"}], max_tokens=4)  # stories260K has no template
    m = glass.load(MODEL, threads=THREADS, chat_template=TEMPLATE)
    conv = [{"role": "user", "content": "Once upon a time"}]
    assert m.apply_chat_template(conv) == "user: Once upon a time\nassistant:"
    thinking = glass.load(MODEL, threads=THREADS,
                          chat_template="{% if enable_thinking is false %}no{% else %}yes{% endif %}")
    assert thinking.apply_chat_template(conv) == "yes"
    assert thinking.apply_chat_template(conv, enable_thinking=False) == "no"
    with pytest.raises(glass.Error, match="kwarg 'bos_token'"):
        thinking.apply_chat_template(conv, bos_token="<s>")
    r = m.chat(conv, max_tokens=12, temperature=0)
    assert r.tokens == m.generate("user: Once upon a time\nassistant:", max_tokens=12, temperature=0).tokens
    stream = m.chat(conv, max_tokens=12, temperature=0, stream=True)
    assert "".join(stream) == r.text == stream.result.text
    s = m.session()
    first = s.chat(conv, max_tokens=8, temperature=0)
    conv += [{"role": "assistant", "content": first.text}, {"role": "user", "content": "Then?"}]
    evaluated = s.stats["n_tokens_evaluated"]
    second = s.chat(conv, max_tokens=8, temperature=0)
    fresh = m.chat(conv, max_tokens=8, temperature=0)
    assert second.tokens == fresh.tokens
    assert s.stats["n_tokens_evaluated"] - evaluated < len(m.tokenize(m.apply_chat_template(conv))) + 8


def test_logprobs(model):
    r = model.generate(PROMPT, max_tokens=12, temperature=0, logprobs=True, top_logprobs=3)
    assert len(r.logprobs) == len(r.tokens) == 12
    for tok, lp in zip(r.tokens, r.logprobs):
        assert lp.id == tok and len(lp.top) == 3
        assert lp.top[0].id == tok and lp.top[0].logprob == lp.logprob  # greedy: the top token
        assert lp.top[0].logprob >= lp.top[1].logprob >= lp.top[2].logprob
    # The same numbers as the log-likelihood of the generated text (decode vs prefill: rounding).
    ids = model.tokenize(PROMPT) + r.tokens
    ll = model.log_likelihood(ids)
    np.testing.assert_allclose([lp.logprob for lp in r.logprobs], ll[4:], atol=1e-4)
    assert model.generate(PROMPT, max_tokens=3).logprobs == []


def test_errors_reach_the_caller(model):
    def boom(piece):
        raise ValueError("from the callback")

    with pytest.raises(ValueError, match="from the callback"):
        model.generate(PROMPT, max_tokens=10, temperature=0, on_piece=boom)
    too_long = [1] * (model.info.n_ctx + 5)
    stream = model.generate(too_long, max_tokens=4, stream=True)
    with pytest.raises(glass.CapacityExceededError):
        next(stream)
    assert stream.done and stream.result is None
