"""Analysis hooks: weights, captured hidden states, log-likelihood, the graph as objects."""
import json
import subprocess

import numpy as np
import pytest

import glass
from conftest import MODEL, THREADS

TEXT = "Once upon a time, there was a little girl named Lily."


def test_tensor_is_the_weight_with_its_shape(model):
    names = model.tensor_names()
    assert "blk.0.attn_q.weight" in names and names == sorted(names)
    q = model.tensor("blk.0.attn_q.weight")
    assert q.dtype == np.float32 and q.shape == (64, 64)
    assert model.tensor("blk.0.attn_k.weight").shape == (32, 64)
    assert model.tensor("output_norm.weight").shape == (64,)
    emb = model.tensor("token_embd.weight")
    assert emb.shape == (512, 64)
    ids = model.tokenize(TEXT)
    got = model.session().eval(ids, capture=["token_embd"])
    np.testing.assert_array_equal(got["token_embd"], emb[ids])  # the embedding rows, exactly
    with pytest.raises(glass.InvalidArgumentError, match="blk.99"):
        model.tensor("blk.99.attn_q.weight")


def test_capture_hidden_states(model):
    ids = model.tokenize(TEXT)
    plain = model.session().eval(ids, all_logits=True)
    s = model.session()
    out = s.eval(ids, all_logits=True, capture=["blk.0.out", "blk.3.out", "blk.3.attn_out", "output_norm"])
    assert set(out) == {"blk.0.out", "blk.3.out", "blk.3.attn_out", "output_norm", "logits"}
    assert out["blk.3.out"].shape == (len(ids), 64) and out["blk.3.out"].dtype == np.float32
    # Capturing a matmul that a fusion would absorb keeps it unfused: equal up to rounding.
    np.testing.assert_allclose(out["logits"], plain, atol=1e-5)
    # logits = output_norm(h) @ output.weight.T
    w = model.tensor("output.weight").astype(np.float64)
    np.testing.assert_allclose(out["output_norm"] @ w.T, out["logits"], atol=1e-4)
    # Residual nodes only: the plan is the model's plus outputs, so the logits are bit-identical.
    t = model.session()
    res = t.eval(ids, all_logits=True, capture=["blk.1.out"])
    assert res["logits"].tobytes() == plain.tobytes()
    # The rows of the next decode step; then without capture the plain array again.
    step = t.eval([432], capture=["blk.1.out", "output_norm"])
    assert step["blk.1.out"].shape == (1, 64) and step["output_norm"].shape == (1, 64)
    assert isinstance(t.eval([383]), np.ndarray)
    assert t.n_past == len(ids) + 2
    with pytest.raises(glass.InvalidArgumentError, match="no.such"):
        t.eval([1], capture=["no.such.node"])


def test_log_likelihood_and_perplexity(model):
    ids = model.tokenize(TEXT)
    ll = model.log_likelihood(TEXT)
    assert ll.shape == (len(ids) - 1,) and np.all(ll <= 0)
    logits = model.session().eval(ids, all_logits=True).astype(np.float64)
    logp = logits - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True)) \
        - logits.max(1, keepdims=True)
    np.testing.assert_allclose(ll, logp[np.arange(len(ids) - 1), ids[1:]], rtol=1e-12, atol=1e-12)
    assert model.perplexity(TEXT) == pytest.approx(float(np.exp(-ll.mean())))
    # The model knows its TinyStories: far better than chance (512 tokens).
    assert model.perplexity(TEXT) < 30
    assert model.perplexity(TEXT) < model.perplexity("zebra quantum sprocket velvet")


def test_graph_objects(model, glass_bin):
    g = model.graph()
    doc = json.loads(g.to_json())
    assert len(g) == len(doc["nodes"]) == len(g.nodes)
    n = g.node("blk.0.attn_out")
    assert n.op == "matmul" and n.shape == ["T", 64] and n.dtype == "f32" and len(n.inputs) == 2
    assert g.nodes[n.inputs[1]].name == "blk.0.attn_output.weight"
    assert g.node("logits").shape == ["O", 512]
    assert g.outputs == {"logits": g.node("logits").id}
    assert len(g.state_updates) == 2 * model.info.n_layers
    assert g.node("blk.0.attn").attrs["kv_len"] == "S"
    assert g.ops()["rms_norm"] == 2 * model.info.n_layers + 1
    assert g.to_dot().startswith("digraph")
    cli = subprocess.run([glass_bin, "graph", "-m", str(MODEL), "--format", "json"], check=True,
                         capture_output=True, text=True).stdout
    # The command loads for one sequence (n_seq_max 1): the block table's rows differ.
    assert json.loads(cli) == json.loads(glass.load(MODEL, n_seq_max=1).graph().to_json())
    compiled = model.graph(after_rewrites=True)
    text = subprocess.run([glass_bin, "graph", "-m", str(MODEL), "-t", str(THREADS), "--after-rewrites"],
                          check=True, capture_output=True, text=True).stdout
    fired = [line[len("rewrite "):] for line in text.splitlines() if line.startswith("rewrite ")]
    assert compiled.rewrites and [r.split(":")[0] for r in compiled.rewrites] == [r.split(":")[0] for r in fired]
    assert any(r.startswith("fuse_matmul_residual") for r in compiled.rewrites)
    assert "matmul_add" in compiled.ops()
    assert glass.load(MODEL, backend="ref").graph(after_rewrites=True).rewrites  # "none fired" line
