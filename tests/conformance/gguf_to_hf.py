#!/usr/bin/python3
"""HF twins of the synthetic-arch GGUFs: an independent oracle for glass's HF loaders.

For each F32 GGUF in fixtures/models/synthetic-arch/ this writes the Hugging Face directory that
llama.cpp's convert_hf_to_gguf.py would have turned into it: config.json with the family's real
transformers keys, model.safetensors with HF tensor names, and the tok512 tokenizer files. The
conversion is inverted here, written from the HF and GGUF formats alone (it reads the GGUF with its
own small reader and writes safetensors by hand); it never calls glass.

What is inverted, per family:
  * names: GGUF's blk.N.attn_q.weight -> HF's model.layers.N.self_attn.q_proj.weight, and so on;
  * RoPE rows: none of these families is permuted by the converter (all rotate halves, NeoX), so
    q/k rows are written as they are (only Llama's would need un-permuting);
  * Gemma 2 / Gemma 3 norms: the converter adds 1 (HF's RMSNorm computes x * (1 + w)), so w - 1 is
    written; Gemma 3n's norms are the multiplier in both formats and stay;
  * Qwen3-MoE experts: GGUF stacks [n_expert, ...]; HF stores mlp.experts.E.{gate,up,down}_proj;
  * Gemma 3n AltUp projections: GGUF stacks [3, dim, dim]; HF stores altup_projections.{0,1,2};
  * Phi-3's fused qkv_proj / gate_up_proj are the same rows in both formats;
  * SmolLM3 (Llama's converter): q/k rows un-permuted from GGUF's interleaved RoPE pairs back to
    HF's rotate-half order; config.json's no_rope_layers is every fourth layer, as llama.cpp fixes;
  * LFM2: the final norm token_embd_norm is model.embedding_norm; conv weights [dim, L] become
    [dim, 1, L]; head_count_kv per layer becomes layer_types ("conv" where it is 0);
  * Qwen 3.5: the multimodal layout (model.language_model.*, a tower and an MTP tensor to skip);
    the (1 + w) norms lose their 1 (not the DeltaNet's ssm_norm), A becomes A_log = log(-A), the
    conv1d taps regain their unit axis, and the value heads go back from GGUF's tiled order (key
    heads repeated over them) to HF's grouped order (the converter's _reorder_v_heads, inverted).
Gemma 3n's twin uses the multimodal layout (model_type "gemma3n", text_config,
model.language_model.* tensors, plus one tiny vision-tower tensor a text loader must skip).

With --mlx-group G each twin is also written MLX-quantized (HF_DIR-mlx4: affine, --mlx-bits 4 or 8,
groups of G, bfloat16 scales and biases, as mlx-community publishes) and as the F32 values that
quantization stands for (HF_DIR-mlx4-deq), so a loader of MLX snapshots can be held to the plain
checkpoint.

Usage: gguf_to_hf.py --fixtures DIR --out DIR [--arch NAME ...] [--mlx-group G] [--set synthetic-2026 --models DIR]
       gguf_to_hf.py --fixtures DIR --out DIR --mlx-from HF_DIR [--mlx-group G] [--mlx-bits 4|8]  (any F32 HF directory)
Writes OUT/index.json: one entry per twin (arch, gguf, hf directory, reference .npy / .json).
Exit 0 on success; 77 when the fixtures are absent or numpy is missing (index.json says why).
"""
import argparse
import json
import math
import os
import struct
import sys

try:
    import numpy as np
except ImportError:  # the caller reports a skip with this reason
    np = None

SKIP = 77

# ---------------------------------------------------------------------------------------------
# GGUF (v3) reader: metadata and F32 tensors.

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


class Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.at)[0]
        self.at += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = self.data[self.at:self.at + n].decode("utf-8")
        self.at += n
        return s

    def value(self, t):
        if t in _SCALARS:
            return self.take(_SCALARS[t])
        if t == 8:
            return self.string()
        if t == 9:
            elem, count = self.take("<I"), self.take("<Q")
            return [self.value(elem) for _ in range(count)]
        raise ValueError(f"gguf: unknown value type {t}")


def read_gguf(path):
    data = open(path, "rb").read()
    r = Reader(data)
    if data[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    r.at = 4
    version, n_tensors, n_kv = r.take("<I"), r.take("<Q"), r.take("<Q")
    if version != 3:
        raise ValueError(f"{path}: GGUF version {version}")
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        ne = [r.take("<Q") for _ in range(r.take("<I"))]
        ggml_type, offset = r.take("<I"), r.take("<Q")
        infos.append((name, ne, ggml_type, offset))
    align = meta.get("general.alignment", 32)
    base = (r.at + align - 1) // align * align
    tensors = {}
    for name, ne, ggml_type, offset in infos:
        if ggml_type != 0:
            raise ValueError(f"{path}: tensor {name} is not F32 (type {ggml_type})")
        shape = list(reversed(ne))  # numpy order: outermost first
        count = int(np.prod(shape)) if shape else 1
        tensors[name] = np.frombuffer(data, dtype="<f4", count=count, offset=base + offset).reshape(shape)
    return meta, tensors


# ---------------------------------------------------------------------------------------------
# safetensors writer: u64 header length, JSON header, raw little-endian data.

class BF16:
    """bfloat16 values: the upper halves of float32s, rounded to nearest even."""

    def __init__(self, values):
        bits = np.ascontiguousarray(values, dtype="<f4").view("<u4").astype(np.uint64)
        self.bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")

    def floats(self):
        return (self.bits.astype("<u4") << 16).view("<f4")


def write_safetensors(path, tensors):
    header, blobs, at = {"__metadata__": {"format": "pt"}}, [], 0
    for name, a in tensors.items():
        if isinstance(a, BF16):
            dtype, a = "BF16", a.bits
        elif a.dtype == np.uint32:
            dtype, a = "U32", np.ascontiguousarray(a, dtype="<u4")
        else:
            dtype, a = "F32", np.ascontiguousarray(a, dtype="<f4")
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [at, at + a.nbytes]}
        blobs.append(a.tobytes())
        at += a.nbytes
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the data starts 8-aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


# ---------------------------------------------------------------------------------------------
# GGUF name -> HF name, per family.

LAYER_COMMON = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
LAYER = {
    "qwen2": dict(LAYER_COMMON, ffn_norm="post_attention_layernorm"),
    "qwen3": dict(LAYER_COMMON, ffn_norm="post_attention_layernorm"),
    "qwen3moe": dict(LAYER_COMMON, ffn_norm="post_attention_layernorm", ffn_gate_inp="mlp.gate"),
    "phi3": dict(LAYER_COMMON, ffn_norm="post_attention_layernorm", attn_qkv="self_attn.qkv_proj",
                 ffn_up="mlp.gate_up_proj"),
    "gemma2": dict(LAYER_COMMON, post_attention_norm="post_attention_layernorm",
                   ffn_norm="pre_feedforward_layernorm", post_ffw_norm="post_feedforward_layernorm"),
}
LAYER["gemma3"] = LAYER["gemma2"]
LAYER["smollm3"] = dict(LAYER_COMMON, ffn_norm="post_attention_layernorm")
LAYER["lfm2"] = dict(
    attn_norm="operator_norm", ffn_norm="ffn_norm", attn_q="self_attn.q_proj", attn_k="self_attn.k_proj",
    attn_v="self_attn.v_proj", attn_output="self_attn.out_proj", attn_q_norm="self_attn.q_layernorm",
    attn_k_norm="self_attn.k_layernorm", ffn_gate="feed_forward.w1", ffn_up="feed_forward.w3",
    ffn_down="feed_forward.w2")
LFM2_CONV = {"shortconv.in_proj": "conv.in_proj", "shortconv.out_proj": "conv.out_proj", "shortconv.conv": "conv.conv"}
LAYER["gemma3n"] = dict(
    LAYER["gemma2"],
    altup_correct_coef="altup.correction_coefs",
    altup_predict_coef="altup.prediction_coefs",
    altup_router="altup.modality_router",
    altup_router_norm="altup.router_norm",
    laurel_l="laurel.linear_left",
    laurel_r="laurel.linear_right",
    laurel_post_norm="laurel.post_laurel_norm",
    inp_gate="per_layer_input_gate",
    proj="per_layer_projection",
    post_norm="post_per_layer_input_norm",
)
LAYER["gemma4"] = dict(
    LAYER["gemma2"],
    inp_gate="per_layer_input_gate",
    proj="per_layer_projection",
    post_norm="post_per_layer_input_norm",
    pre_ffw_norm_2="pre_feedforward_layernorm_2",
    post_ffw_norm_1="post_feedforward_layernorm_1",
    post_ffw_norm_2="post_feedforward_layernorm_2",
)
# Gemma 4's parameters without ".weight" in HF (nn.Parameter), as the converter renames them.
GEMMA4_PARAMS = {
    ("layer_output_scale", "weight"): "layer_scalar",
    ("ffn_gate_inp", "weight"): "router.proj.weight",
    ("ffn_gate_inp", "scale"): "router.scale",
    ("ffn_down_exps", "scale"): "router.per_expert_scale",
    ("ffn_gate_up_exps", "weight"): "experts.gate_up_proj",
    ("ffn_down_exps", "weight"): "experts.down_proj",
}
GLOBAL = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
    "per_layer_token_embd.weight": "model.embed_tokens_per_layer.weight",
    "per_layer_model_proj.weight": "model.per_layer_model_projection.weight",
    "per_layer_proj_norm.weight": "model.per_layer_projection_norm.weight",
}
STACKED_GLOBAL = {  # GGUF stacks these along axis 0; HF keeps one tensor per index
    "altup_proj.weight": "model.altup_projections.{}.weight",
    "altup_unembd_proj.weight": "model.altup_unembed_projections.{}.weight",
}
EXPERTS = {"ffn_gate_exps": "gate_proj", "ffn_up_exps": "up_proj", "ffn_down_exps": "down_proj"}


def unpermute(w, n_head):
    """Inverse of llama.cpp's LlamaModel.permute: GGUF's interleaved RoPE rows back to HF's halves."""
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def grouped_v_heads(t, axis, n_k, per_k, head_dim):
    """GGUF's tiled value heads [per_k, n_k, head_dim] along `axis` -> HF's grouped [n_k, per_k, head_dim]."""
    shape = list(t.shape)
    t = t.reshape(shape[:axis] + [per_k, n_k, head_dim] + shape[axis + 1:])
    return np.ascontiguousarray(np.swapaxes(t, axis, axis + 1)).reshape(shape)


def qwen35_tensors(gguf, meta):
    n_k, n_v = meta["qwen35.ssm.group_count"], meta["qwen35.ssm.time_step_rank"]
    d = meta["qwen35.ssm.state_size"]
    r, key_dim = n_v // n_k, n_k * d
    names = {"attn_norm": "input_layernorm", "post_attention_norm": "post_attention_layernorm",
             "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
             "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
             "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
             "attn_qkv": "linear_attn.in_proj_qkv", "attn_gate": "linear_attn.in_proj_z",
             "ssm_beta": "linear_attn.in_proj_b", "ssm_alpha": "linear_attn.in_proj_a",
             "ssm_conv1d": "linear_attn.conv1d", "ssm_norm": "linear_attn.norm", "ssm_out": "linear_attn.out_proj"}
    one = np.float32(1)
    out = {"model.language_model.embed_tokens.weight": gguf["token_embd.weight"],
           "model.language_model.norm.weight": gguf["output_norm.weight"] - one}
    if "output.weight" in gguf:
        out["lm_head.weight"] = gguf["output.weight"]
    for name, t in gguf.items():
        parts = name.split(".")
        if parts[0] != "blk":
            continue
        layer, what = parts[1], parts[2]
        prefix = f"model.language_model.layers.{layer}."
        if what == "ssm_a":
            out[prefix + "linear_attn.A_log"] = np.log(-grouped_v_heads(t, 0, n_k, r, 1))
            continue
        if what == "ssm_dt":
            out[prefix + "linear_attn.dt_bias"] = grouped_v_heads(t, 0, n_k, r, 1)
            continue
        if what in ("attn_norm", "post_attention_norm", "attn_q_norm", "attn_k_norm"):
            t = t - one
        elif what in ("attn_qkv", "ssm_conv1d"):
            t = np.concatenate([t[:2 * key_dim], grouped_v_heads(t[2 * key_dim:], 0, n_k, r, d)])
            if what == "ssm_conv1d":
                t = t[:, None, :]
        elif what == "attn_gate":
            t = grouped_v_heads(t, 0, n_k, r, d)
        elif what in ("ssm_beta", "ssm_alpha"):
            t = grouped_v_heads(t, 0, n_k, r, 1)
        elif what == "ssm_out":
            t = grouped_v_heads(t, 1, n_k, r, d)
        out[prefix + names[what] + ".weight"] = np.ascontiguousarray(t)
    out["model.visual.patch_embed.proj.weight"] = np.zeros((2, 2), dtype=np.float32)  # skipped
    out["mtp.fc.weight"] = np.zeros((2, 2), dtype=np.float32)  # skipped
    return out


def hf_tensors(arch, gguf, meta=None):
    """The HF state dict for a GGUF state dict."""
    if arch == "qwen35":
        return qwen35_tensors(gguf, meta)
    out = {}
    if arch == "lfm2":
        gguf = dict(gguf)
        out["model.embedding_norm.weight"] = gguf.pop("token_embd_norm.weight")
        for name in [n for n in gguf if ".shortconv." in n]:
            t = gguf.pop(name)
            layer, what = name.split(".")[1], name.split(".")[2] + "." + name.split(".")[3]
            out[f"model.layers.{layer}.{LFM2_CONV[what]}.weight"] = t[:, None, :] if what == "shortconv.conv" else t
    if arch == "smollm3":
        gguf = dict(gguf)
        heads, kv = meta["smollm3.attention.head_count"], meta.get("smollm3.attention.head_count_kv")
        for name in gguf:
            if name.endswith("attn_q.weight"):
                gguf[name] = unpermute(gguf[name], heads)
            elif name.endswith("attn_k.weight"):
                gguf[name] = unpermute(gguf[name], kv if kv else heads)
    shift_norms = arch in ("gemma2", "gemma3")  # HF stores w - 1
    if arch == "gemma4":  # rope_freqs comes from rope_parameters (config.json)
        gguf = {n: t for n, t in gguf.items() if n != "rope_freqs.weight"}
    for name, t in gguf.items():
        if name in GLOBAL:
            hf = GLOBAL[name]
            if shift_norms and name.endswith("norm.weight"):
                t = t - np.float32(1)
            out[hf] = t
            continue
        if name in STACKED_GLOBAL:
            for i in range(t.shape[0]):
                out[STACKED_GLOBAL[name].format(i)] = t[i]
            continue
        parts = name.split(".")
        if parts[0] != "blk" or len(parts) != 4:
            raise ValueError(f"{arch}: no HF name for {name}")
        layer, what, kind = parts[1], parts[2], parts[3]
        prefix = f"model.layers.{layer}."
        if arch == "gemma4" and (what, kind) in GEMMA4_PARAMS:
            out[prefix + GEMMA4_PARAMS[(what, kind)]] = t
            continue
        if what in EXPERTS:
            for e in range(t.shape[0]):
                out[f"{prefix}mlp.experts.{e}.{EXPERTS[what]}.weight"] = t[e]
            continue
        if what == "altup_correct_scale":  # an nn.Parameter, no ".weight"
            out[prefix + "altup.correct_output_scale"] = t
            continue
        if what not in LAYER[arch]:
            raise ValueError(f"{arch}: no HF name for {name}")
        if shift_norms and what.endswith("norm") and kind == "weight":
            t = t - np.float32(1)
        out[f"{prefix}{LAYER[arch][what]}.{kind}"] = t
    return out


# ---------------------------------------------------------------------------------------------
# config.json from the GGUF metadata, in each family's transformers keys.

def layer_types(local):
    return ["sliding_attention" if l else "full_attention" for l in local]


def period_local(n_layers, period):
    return [period > 1 and i % period < period - 1 for i in range(n_layers)]


def normal_cdf(x):
    return 0.5 * math.erfc(-x / math.sqrt(2))


def gemma4_config(meta, tensors, c, g, n_layers):
    """Gemma 4's multimodal config around its text config, in the keys llama.cpp's converter reads."""
    local = [bool(x) for x in g("attention.sliding_window_pattern")]
    kv = g("attention.head_count_kv")
    kv_swa = next(h for h, l in zip(kv, local) if l)
    kv_full = next((h for h, l in zip(kv, local) if not l), kv_swa)
    ffn = g("feed_forward_length")
    ffn = ffn if isinstance(ffn, list) else [ffn] * n_layers
    shared = g("attention.shared_kv_layers", 0)
    freqs = tensors["rope_freqs.weight"]
    head_full, head_swa = g("attention.key_length"), g("attention.key_length_swa")
    text = dict(c, model_type="gemma4_text", hidden_activation="gelu_pytorch_tanh",
                head_dim=head_swa, global_head_dim=head_full, num_key_value_heads=kv_swa,
                num_global_key_value_heads=kv_full, intermediate_size=ffn[0],
                use_double_wide_mlp=ffn[-1] == 2 * ffn[0] and shared > 0,
                hidden_size_per_layer_input=g("embedding_length_per_layer_input", 0),
                num_kv_shared_layers=shared, layer_types=layer_types(local),
                sliding_window=g("attention.sliding_window"),
                final_logit_softcapping=g("final_logit_softcapping"),
                rope_parameters={
                    "full_attention": {"rope_type": "proportional", "rope_theta": g("rope.freq_base"),
                                       "partial_rotary_factor": 2 * int((freqs == 1).sum()) / head_full},
                    "sliding_attention": {"rope_type": "default", "rope_theta": g("rope.freq_base_swa"),
                                          "partial_rotary_factor": g("rope.dimension_count_swa") / head_swa}})
    if g("expert_count"):
        text.update(enable_moe_block=True, num_experts=g("expert_count"), top_k_experts=g("expert_used_count"),
                    expert_intermediate_size=g("expert_feed_forward_length"))
    for key in ("bos_token_id", "eos_token_id", "torch_dtype", "head_dim_swa"):
        text.pop(key, None)
    text["head_dim"] = head_swa
    return {"model_type": "gemma4", "architectures": ["Gemma4ForConditionalGeneration"], "text_config": text,
            "vision_config": {"model_type": "gemma4_vision", "hidden_size": 8},
            "tie_word_embeddings": text["tie_word_embeddings"],
            "bos_token_id": meta["tokenizer.ggml.bos_token_id"],
            "eos_token_id": meta["tokenizer.ggml.eos_token_id"], "torch_dtype": "float32"}


def config(arch, meta, tensors):
    def g(key, default=None):
        v = meta.get(f"{arch}.{key}", default)
        # GGUF floats are F32: shown as the shortest decimal that reads back as the same F32.
        return float(str(np.float32(v))) if isinstance(v, float) else v

    n_layers = g("block_count")
    dim = g("embedding_length")
    heads = g("attention.head_count")
    kv = g("attention.head_count_kv", heads)
    vocab = tensors["token_embd.weight"].shape[0]
    tied = "output.weight" not in tensors
    c = {
        "hidden_size": dim,
        "num_hidden_layers": n_layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "max_position_embeddings": g("context_length"),
        "rms_norm_eps": g("attention.layer_norm_rms_epsilon"),
        "vocab_size": vocab,
        "tie_word_embeddings": tied,
        "torch_dtype": "float32",
        "bos_token_id": meta["tokenizer.ggml.bos_token_id"],
        "eos_token_id": meta["tokenizer.ggml.eos_token_id"],
    }
    ffn = g("feed_forward_length")
    if ffn is not None:
        c["intermediate_size"] = ffn
    if g("attention.key_length") is not None:
        c["head_dim"] = g("attention.key_length")
    head_dim = g("attention.key_length", dim // heads)
    if arch in ("qwen2", "qwen3", "qwen3moe"):
        name = {"qwen2": "Qwen2", "qwen3": "Qwen3", "qwen3moe": "Qwen3Moe"}[arch]
        c.update(model_type={"qwen3moe": "qwen3_moe"}.get(arch, arch), architectures=[f"{name}ForCausalLM"],
                 hidden_act="silu", rope_theta=g("rope.freq_base", 10000.0), use_sliding_window=False,
                 sliding_window=None, max_window_layers=n_layers, rope_scaling=None)
        if arch != "qwen2":
            c["attention_bias"] = False
        if arch == "qwen3moe":
            c.update(num_experts=g("expert_count"), num_experts_per_tok=g("expert_used_count"),
                     moe_intermediate_size=g("expert_feed_forward_length"), norm_topk_prob=True,
                     decoder_sparse_step=1, mlp_only_layers=[], router_aux_loss_coef=0.001)
        return c
    if arch == "smollm3":
        c.update(model_type="smollm3", architectures=["SmolLM3ForCausalLM"], hidden_act="silu",
                 rope_theta=g("rope.freq_base", 10000.0), attention_bias=False, mlp_bias=False,
                 use_sliding_window=False, sliding_window=None, rope_scaling=None,
                 no_rope_layer_interval=4, no_rope_layers=[int((i + 1) % 4 != 0) for i in range(n_layers)],
                 layer_types=["full_attention"] * n_layers)
        return c
    if arch == "qwen35":
        interval = g("full_attention_interval", 4)
        sections = g("rope.dimension_sections")
        text = dict(c, model_type="qwen3_5_text", hidden_act="silu", head_dim=head_dim,
                    attn_output_gate=True, linear_conv_kernel_dim=g("ssm.conv_kernel"),
                    linear_key_head_dim=g("ssm.state_size"),
                    linear_value_head_dim=g("ssm.inner_size") // g("ssm.time_step_rank"),
                    linear_num_key_heads=g("ssm.group_count"), linear_num_value_heads=g("ssm.time_step_rank"),
                    layer_types=["full_attention" if (i + 1) % interval == 0 else "linear_attention"
                                 for i in range(n_layers)],
                    rope_parameters={"rope_type": "default", "rope_theta": g("rope.freq_base"),
                                     "partial_rotary_factor": g("rope.dimension_count") / head_dim,
                                     "mrope_section": sections[:3], "mrope_interleaved": True})
        for key in ("bos_token_id", "eos_token_id", "torch_dtype"):
            text.pop(key, None)
        return {"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"],
                "text_config": text, "vision_config": {"model_type": "qwen3_5", "hidden_size": 8},
                "tie_word_embeddings": tied, "bos_token_id": meta["tokenizer.ggml.bos_token_id"],
                "eos_token_id": meta["tokenizer.ggml.eos_token_id"], "torch_dtype": "float32"}
    if arch == "lfm2":
        kv_per_layer = meta["lfm2.attention.head_count_kv"]
        del c["rms_norm_eps"], c["intermediate_size"]
        c.update(model_type="lfm2", architectures=["Lfm2ForCausalLM"], norm_eps=g("attention.layer_norm_rms_epsilon"),
                 num_key_value_heads=max(kv_per_layer), rope_theta=g("rope.freq_base", 1e6),
                 conv_L_cache=g("shortconv.l_cache"), conv_bias=False, use_pos_enc=True,
                 layer_types=["conv" if h == 0 else "full_attention" for h in kv_per_layer],
                 # the converter's width: int(2 * block_ff_dim / 3), rounded up to block_multiple_of
                 block_ff_dim=ffn * 3 // 2, block_auto_adjust_ff_dim=True, block_ffn_dim_multiplier=1.0,
                 block_multiple_of=ffn, block_use_swiglu=True, tie_embedding=tied)
        del c["tie_word_embeddings"]
        return c
    if arch == "phi3":
        n_rot = g("rope.dimension_count", head_dim)
        c.update(model_type="phi3", architectures=["Phi3ForCausalLM"], hidden_act="silu",
                 rope_theta=g("rope.freq_base", 10000.0), partial_rotary_factor=n_rot * heads / dim,
                 original_max_position_embeddings=g("rope.scaling.original_context_length"),
                 sliding_window=g("attention.sliding_window") or None, rope_scaling=None,
                 attention_bias=False, resid_pdrop=0.0)
        return c
    if arch == "gemma4":
        return gemma4_config(meta, tensors, c, g, n_layers)
    # Gemma: queries scaled by query_pre_attn_scalar^-0.5 = head_dim^-0.5 here; tanh GELU.
    c.update(hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=head_dim,
             sliding_window=g("attention.sliding_window"))
    if arch == "gemma2":
        c.update(model_type="gemma2", architectures=["Gemma2ForCausalLM"], rope_theta=g("rope.freq_base", 10000.0),
                 attn_logit_softcapping=g("attn_logit_softcapping"),
                 final_logit_softcapping=g("final_logit_softcapping"))
        return c
    pattern = g("attention.sliding_window_pattern")
    if isinstance(pattern, list):
        local = [bool(x) for x in pattern]
    else:
        local = period_local(n_layers, pattern if pattern is not None else (6 if arch == "gemma3" else 5))
    c.update(rope_theta=g("rope.freq_base", 1e6), rope_local_base_freq=g("rope.freq_base_swa", 10000.0),
             layer_types=layer_types(local), attn_logit_softcapping=None,
             final_logit_softcapping=g("final_logit_softcapping"))
    if arch == "gemma3":
        c.update(model_type="gemma3_text", architectures=["Gemma3ForCausalLM"], rope_scaling=None)
        return c
    # gemma3n: the multimodal wrapper around its text config.
    scales = g("activation_sparsity_scale")
    c.update(
        model_type="gemma3n_text",
        intermediate_size=list(ffn) if isinstance(ffn, list) else ffn,
        altup_num_inputs=g("altup.num_inputs", 4),
        altup_active_idx=g("altup.active_idx", 0),
        altup_coef_clip=120.0,
        altup_correct_scale=True,
        altup_lr_multiplier=1.0,
        hidden_size_per_layer_input=g("embedding_length_per_layer_input", 256),
        laurel_rank=tensors["blk.0.laurel_l.weight"].shape[0],
        num_kv_shared_layers=g("attention.shared_kv_layers"),
        activation_sparsity_pattern=[0.0 if s == 0 else round(normal_cdf(s), 6) for s in scales],
        vocab_size_per_layer_input=vocab,
        query_pre_attn_scalar=None,
    )
    del c["bos_token_id"], c["eos_token_id"]
    return {
        "model_type": "gemma3n",
        "architectures": ["Gemma3nForConditionalGeneration"],
        "text_config": c,
        "vision_config": {"model_type": "gemma3n_vision", "hidden_size": 8},
        "audio_config": {"model_type": "gemma3n_audio", "hidden_size": 8},
        "bos_token_id": meta["tokenizer.ggml.bos_token_id"],
        "eos_token_id": meta["tokenizer.ggml.eos_token_id"],
        "torch_dtype": "float32",
    }


# ---------------------------------------------------------------------------------------------
# MLX affine quantization (mx.quantize, as MLX's documentation states it): per group of G consecutive
# weights of a row, alpha = max, beta = min, s = (alpha - beta) / (2^bits - 1), q = round((w - beta)
# / s) in 0..2^bits - 1, w ~ s * q + beta. Scales and biases are stored in the model's dtype
# (bfloat16 here, as mlx-community's bf16 models), q packed 32 / bits to a uint32, the first in the
# lowest bits. The
# modules mlx-lm quantizes: Linear and Embedding weights whose rows split into groups (norms and
# odd-sized matrices stay as they are).

def mlx_quantizable(name, a, group):
    return (a.ndim == 2 and name.endswith(".weight") and "norm" not in name and "vision_tower" not in name
            and a.shape[1] % group == 0)


def mlx_quantize(a, group, bits):
    rows, cols = a.shape
    top, per_word = 2 ** bits - 1, 32 // bits
    g = a.astype(np.float32).reshape(rows, cols // group, group)
    hi, lo = g.max(axis=2), g.min(axis=2)
    scales = BF16(np.maximum((hi - lo) / float(top), 1e-8))
    biases = BF16(lo)
    s, b = scales.floats()[..., None], biases.floats()[..., None]
    q = np.clip(np.rint((g - b) / s), 0, top).astype(np.uint32)
    dequantized = (s * q.astype(np.float32) + b).reshape(rows, cols)
    q = q.reshape(rows, cols // per_word, per_word)
    packed = np.zeros((rows, cols // per_word), dtype=np.uint32)
    for j in range(per_word):
        packed |= q[:, :, j] << np.uint32(bits * j)
    return packed, scales, biases, dequantized


def write_mlx(hf_dir, group, bits=4):
    """HF_DIR-mlxB: the twin with its matrices MLX-quantized; HF_DIR-mlxB-deq: the same values as F32."""
    tensors = read_safetensors_f32(os.path.join(hf_dir, "model.safetensors"))
    quantized, dequantized = {}, {}
    for name, a in tensors.items():
        if mlx_quantizable(name, a, group):
            packed, scales, biases, deq = mlx_quantize(a, group, bits)
            module = name[: -len(".weight")]
            quantized[name], quantized[module + ".scales"], quantized[module + ".biases"] = packed, scales, biases
            dequantized[name] = deq
        else:
            quantized[name] = dequantized[name] = a
    out = {}
    for suffix, ts, quant in ((f"-mlx{bits}", quantized, True), (f"-mlx{bits}-deq", dequantized, False)):
        d = hf_dir + suffix
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(hf_dir):
            if f not in ("model.safetensors", "config.json"):
                with open(os.path.join(hf_dir, f), "rb") as src, open(os.path.join(d, f), "wb") as dst:
                    dst.write(src.read())
        c = json.load(open(os.path.join(hf_dir, "config.json"), encoding="utf-8"))
        if quant:
            c["quantization"] = {"group_size": group, "bits": bits}
            c["quantization_config"] = {"group_size": group, "bits": bits}
        with open(os.path.join(d, "config.json"), "w", encoding="utf-8") as f:
            json.dump(c, f, indent=2)
        write_safetensors(os.path.join(d, "model.safetensors"), ts)
        out["quantized" if quant else "dequantized"] = d
    return out


def write_bf16(hf_dir):
    """HF_DIR-bf16: the twin as a BF16 checkpoint (every tensor, norms too, as published checkpoints
    are); HF_DIR-bf16-f32: the same rounded values as F32."""
    tensors = read_safetensors_f32(os.path.join(hf_dir, "model.safetensors"))
    out = {}
    for suffix, convert in (("-bf16", lambda a: BF16(a)), ("-bf16-f32", lambda a: BF16(a).floats().reshape(a.shape))):
        d = hf_dir + suffix
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(hf_dir):
            if f != "model.safetensors":
                with open(os.path.join(hf_dir, f), "rb") as src, open(os.path.join(d, f), "wb") as dst:
                    dst.write(src.read())
        ts = {}
        for name, a in tensors.items():
            t = convert(a)
            if isinstance(t, BF16):
                t.bits = t.bits.reshape(a.shape)
            ts[name] = t
        write_safetensors(os.path.join(d, "model.safetensors"), ts)
        out["bf16" if suffix == "-bf16" else "bf16_f32"] = d
    return out


def read_safetensors_f32(path):
    data = open(path, "rb").read()
    n = struct.unpack_from("<Q", data, 0)[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise ValueError(f"{path}: {name} is {info['dtype']}")
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(data, dtype="<f4", count=(e - b) // 4, offset=8 + n + b).reshape(info["shape"])
    return out


# ---------------------------------------------------------------------------------------------
# The tokenizer: the fixtures' tok512 tokenizer.json (stories260K-hf), after checking that its
# vocabulary is the GGUF's token for token.

def tokenizer_files(fixtures, meta):
    src = os.path.join(fixtures, "models", "stories260K-hf")
    tok = json.load(open(os.path.join(src, "tokenizer.json"), encoding="utf-8"))
    vocab = tok["model"]["vocab"]
    tokens = meta["tokenizer.ggml.tokens"]
    by_id = {i: piece for piece, i in vocab.items()}
    for a in tok.get("added_tokens", []):
        by_id[a["id"]] = a["content"]
    if len(by_id) != len(tokens) or any(by_id.get(i) != t for i, t in enumerate(tokens)):
        raise ValueError("stories260K-hf/tokenizer.json is not the GGUF's vocabulary")
    return {name: open(os.path.join(src, name), "rb").read() for name in ("tokenizer.json", "tokenizer_config.json")}


def convert(fixtures, gguf_path, out_dir, arch_expected):
    meta, gguf = read_gguf(gguf_path)
    arch = meta["general.architecture"]
    if arch != arch_expected.replace("gemma4moe", "gemma4"):
        raise ValueError(f"{gguf_path}: architecture {arch}, expected {arch_expected}")
    os.makedirs(out_dir, exist_ok=True)
    tensors = hf_tensors(arch, gguf, meta)
    if arch in ("gemma3n", "gemma4"):  # the multimodal layout, with a tower tensor the text graph never reads
        tensors = {n.replace("model.", "model.language_model.", 1) if n.startswith("model.") else n: t
                   for n, t in tensors.items()}
        tensors["model.vision_tower.timm_model.stem.conv.weight"] = np.zeros((2, 2), dtype=np.float32)
    write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors)
    with open(os.path.join(out_dir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config(arch, meta, gguf), f, indent=2)
    with open(os.path.join(out_dir, "generation_config.json"), "w", encoding="utf-8") as f:
        json.dump({"bos_token_id": meta["tokenizer.ggml.bos_token_id"],
                   "eos_token_id": meta["tokenizer.ggml.eos_token_id"]}, f)
    for name, data in tokenizer_files(fixtures, meta).items():
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fixtures", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--arch", action="append", help="only these families (default: all)")
    p.add_argument("--mlx-group", type=int, default=0,
                   help="also write each twin MLX-quantized (4-bit, groups of N) and its dequantized F32 twin")
    p.add_argument("--mlx-from", help="instead: MLX-quantize this F32 HF directory (a copy in --out)")
    p.add_argument("--mlx-bits", type=int, default=4, choices=(4, 8), help="MLX quantization width")
    p.add_argument("--bf16", action="store_true",
                   help="also write each twin as a BF16 checkpoint and its values as F32 (HF_DIR-bf16[-f32])")
    p.add_argument("--set", default="synthetic-arch", help="the fixture set (models/SET, reference/SET)")
    p.add_argument("--models", help="the folder holding models/SET and reference/SET (default: --fixtures)")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    index = {"twins": []}
    if a.mlx_from:
        if np is None:
            index["skip_reason"] = "numpy is missing"
            json.dump(index, open(os.path.join(a.out, "index.json"), "w"), indent=2)
            return SKIP
        copy = os.path.join(a.out, os.path.basename(os.path.normpath(a.mlx_from)))
        os.makedirs(copy, exist_ok=True)
        for f in os.listdir(a.mlx_from):
            with open(os.path.join(a.mlx_from, f), "rb") as src, open(os.path.join(copy, f), "wb") as dst:
                dst.write(src.read())
        mlx = write_mlx(copy, a.mlx_group or 32, a.mlx_bits)
        index["twins"].append({"hf": copy, "mlx": mlx["quantized"], "mlx_dequantized": mlx["dequantized"]})
        json.dump(index, open(os.path.join(a.out, "index.json"), "w"), indent=2)
        return 0
    root = a.models or a.fixtures
    models = os.path.join(root, "models", a.set)
    if np is None or not os.path.isdir(models):
        index["skip_reason"] = "numpy is missing" if np is None else f"no fixtures at {models}"
        json.dump(index, open(os.path.join(a.out, "index.json"), "w"), indent=2)
        print(index["skip_reason"], file=sys.stderr)
        return SKIP
    for fname in sorted(os.listdir(models)):
        if not fname.endswith("-f32.gguf"):
            continue
        stem = fname[: -len(".gguf")]
        arch = stem[: -len("-f32")]
        if a.arch and arch not in a.arch:
            continue
        # llama.cpp special-cases a general.name containing "phi3" (it then wants <|endoftext|>);
        # a converted file's general.name is its directory's name.
        hf_dir = os.path.join(a.out, stem.replace("phi3", "phi_3") + "-hf")
        convert(a.fixtures, os.path.join(models, fname), hf_dir, arch)
        ref = os.path.join(root, "reference", a.set, stem)
        entry = {"arch": arch, "gguf": os.path.join(models, fname), "hf": hf_dir,
                 "reference": ref + ".npy", "reference_json": ref + ".json"}
        if a.mlx_group:
            mlx = write_mlx(hf_dir, a.mlx_group, a.mlx_bits)
            entry["mlx"], entry["mlx_dequantized"] = mlx["quantized"], mlx["dequantized"]
        if a.bf16:
            entry.update(write_bf16(hf_dir))
        index["twins"].append(entry)
    json.dump(index, open(os.path.join(a.out, "index.json"), "w"), indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
