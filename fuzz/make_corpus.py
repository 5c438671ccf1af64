#!/usr/bin/env python3
"""Builds the harnesses' seed corpora from the shared fixtures (scripts/fuzz.sh runs it).

  fuzz/make_corpus.py FIXTURES_DIR OUT_DIR

Writes OUT_DIR/<harness>/<seed> for every harness in fuzz/. Seeds are small on purpose (libFuzzer
mutates small inputs faster and takes its -max_len from them): big fixtures are cut down by a
generator here (vocabularies to their first tokens, safetensors tensors to one element, GGUF
models to their metadata) rather than copied, and a tiny llama GGUF with real tensors is written
so that the graph build runs. The separator between the parts of one input is fuzz_input.h's.
"""
import hashlib
import json
import os
import struct
import sys

SEP = b"\n#glass-fuzz-part#\n"


def put(out, harness, name, data):
    d = os.path.join(out, harness)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# --- GGUF -----------------------------------------------------------------------------------------
SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<B", 10: "<Q", 11: "<q", 12: "<d"}


def gguf_read(path):
    """(version, [(key, type, raw value bytes)], [(name, dims, type)]) of a GGUF file's header."""
    b = open(path, "rb").read()
    pos = 0

    def take(n):
        nonlocal pos
        v = b[pos:pos + n]
        pos += n
        return v

    def u32():
        return struct.unpack("<I", take(4))[0]

    def u64():
        return struct.unpack("<Q", take(8))[0]

    def value(t):
        start = pos
        if t == 8:
            take(u64())
        elif t == 9:
            et, n = u32(), u64()
            for _ in range(n):
                value(et)
        else:
            take(struct.calcsize(SCALAR[t]))
        return b[start:pos]

    assert take(4) == b"GGUF"
    version, n_tensors, n_kv = u32(), u64(), u64()
    kvs = []
    for _ in range(n_kv):
        key = take(u64()).decode()
        t = u32()
        kvs.append((key, t, value(t)))
    tensors = []
    for _ in range(n_tensors):
        name = take(u64()).decode()
        dims = [u64() for _ in range(u32())]
        t = u32()
        u64()
        tensors.append((name, dims, t))
    return version, kvs, tensors


def gstr(s):
    s = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(s)) + s


def gguf_write(kvs, tensors, alignment=32):
    """kvs: [(key, type, raw)]; tensors: [(name, dims innermost first, ggml type, data bytes)]."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, t, raw in kvs:
        out += gstr(key) + struct.pack("<I", t) + raw
    offset = 0
    for name, dims, t, data in tensors:
        out += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", t, offset)
        offset += (len(data) + alignment - 1) // alignment * alignment
    out += b"\0" * ((-len(out)) % alignment)
    for _, _, _, data in tensors:
        out += data + b"\0" * ((-len(data)) % alignment)
    return out


def kv_u32(k, v):
    return (k, 4, struct.pack("<I", v))


def kv_f32(k, v):
    return (k, 6, struct.pack("<f", v))


def kv_str(k, v):
    return (k, 8, gstr(v))


def kv_arr(k, et, items):
    raw = struct.pack("<IQ", et, len(items))
    for it in items:
        raw += gstr(it) if et == 8 else struct.pack(SCALAR[et], it)
    return (k, 9, raw)


def tiny_llama(arch="llama", heads=2, kv_heads=1, tied=False):
    dim, ffn, vocab = 8, 16, 8
    hd = dim // heads
    kvs = [kv_str("general.architecture", arch), kv_u32(f"{arch}.block_count", 1),
           kv_u32(f"{arch}.context_length", 32), kv_u32(f"{arch}.embedding_length", dim),
           kv_u32(f"{arch}.feed_forward_length", ffn), kv_u32(f"{arch}.attention.head_count", heads),
           kv_u32(f"{arch}.attention.head_count_kv", kv_heads),
           kv_f32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-5),
           kv_str("tokenizer.ggml.model", "llama"),
           kv_arr("tokenizer.ggml.tokens", 8, ["<unk>", "<s>", "</s>", "\u2581", "a", "b", "\u2581a", "ab"]),
           kv_arr("tokenizer.ggml.scores", 6, [0, 0, 0, -1, -2, -3, -0.5, -0.7]),
           kv_arr("tokenizer.ggml.token_type", 5, [2, 3, 3, 1, 1, 1, 1, 1]),
           kv_u32("tokenizer.ggml.bos_token_id", 1), kv_u32("tokenizer.ggml.eos_token_id", 2),
           kv_u32("tokenizer.ggml.unknown_token_id", 0)]
    tensors = []

    def t(name, shape):  # shape outermost first
        n = 1
        for d in shape:
            n *= d
        tensors.append((name, list(reversed(shape)), 0, struct.pack(f"<{n}f", *([0.5] * n))))

    t("token_embd.weight", [vocab, dim])
    t("output_norm.weight", [dim])
    if not tied:
        t("output.weight", [vocab, dim])
    t("blk.0.attn_norm.weight", [dim])
    t("blk.0.attn_q.weight", [dim, dim])
    t("blk.0.attn_k.weight", [kv_heads * hd, dim])
    t("blk.0.attn_v.weight", [kv_heads * hd, dim])
    t("blk.0.attn_output.weight", [dim, dim])
    t("blk.0.ffn_norm.weight", [dim])
    t("blk.0.ffn_gate.weight", [ffn, dim])
    t("blk.0.ffn_up.weight", [ffn, dim])
    t("blk.0.ffn_down.weight", [dim, ffn])
    return gguf_write(kvs, tensors)


def gguf_corpus(fx, out):
    put(out, "gguf", "tiny-llama.gguf", tiny_llama())
    put(out, "gguf", "tiny-llama-tied-mha.gguf", tiny_llama(heads=2, kv_heads=2, tied=True))
    for arch in ["qwen2", "qwen3", "phi3", "qwen3moe", "gemma2", "gemma3", "gemma3n"]:
        put(out, "gguf", f"tiny-{arch}.gguf", tiny_llama(arch=arch))
    # Every fixture model's metadata and tensor names, each tensor cut to 8 F32 values (shapes no
    # longer match: the graph build reports the first one, after reading the hyper-parameters) and
    # vocabularies cut to their first 64 tokens.
    models = os.path.join(fx, "models")
    paths = [os.path.join(models, "stories260K.gguf")]
    for sub in ["synthetic", "synthetic-arch"]:
        d = os.path.join(models, sub)
        if os.path.isdir(d):
            # One file per family and storage kind: the quantized twins share their metadata.
            paths += [os.path.join(d, f) for f in sorted(os.listdir(d))
                      if f.endswith(".gguf") and ("f32" in f or "q4_k_m" in f)]
    for p in paths:
        if not os.path.exists(p):
            continue
        _, kvs, tensors = gguf_read(p)
        small = []
        for key, t, raw in kvs:
            if t == 9 and key.startswith("tokenizer.ggml."):
                et, n = struct.unpack("<IQ", raw[:12])
                items, pos = [], 12
                for _ in range(min(n, 64)):
                    if et == 8:
                        ln = struct.unpack("<Q", raw[pos:pos + 8])[0]
                        items.append(raw[pos + 8:pos + 8 + ln])
                        pos += 8 + ln
                    else:
                        sz = struct.calcsize(SCALAR[et])
                        items.append(struct.unpack(SCALAR[et], raw[pos:pos + sz])[0])
                        pos += sz
                if et == 8 or et in SCALAR:
                    small.append(kv_arr(key, et, items))
                continue
            small.append((key, t, raw))
        put(out, "gguf", "meta-" + os.path.basename(p), gguf_write(small, [(n, [8], 0, b"\0" * 32) for n, d, t in tensors]))


# --- safetensors, config.json, shard index -------------------------------------------------------
def st_file(tensors):
    """tensors: [(name, dtype, shape, nbytes)] -> safetensors bytes."""
    header, off = {}, 0
    for name, dtype, shape, nbytes in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + nbytes]}
        off += nbytes
    h = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(h)) + h + b"\0" * off


SIZES = {"F32": 4, "F16": 2, "BF16": 2, "I32": 4, "I64": 8, "F64": 8, "U8": 1, "I8": 1, "BOOL": 1, "I16": 2}


def st_corpus(fx, out):
    hf = os.path.join(fx, "models", "stories260K-hf")
    put(out, "safetensors", "tiny.st", b"\0" + st_file([("a", "F32", [2, 2], 16), ("b", "BF16", [3], 6),
                                                         ("c", "F16", [], 2), ("d", "I32", [0], 0)]))
    p = os.path.join(hf, "model.safetensors")
    if os.path.exists(p):
        b = open(p, "rb").read()
        n = struct.unpack("<Q", b[:8])[0]
        header = json.loads(b[8:8 + n])
        meta = header.pop("__metadata__", None)
        ts = [(k, v["dtype"], [1], SIZES.get(v["dtype"], 4)) for k, v in header.items()]
        data = st_file(ts)
        if meta is not None:  # keep the metadata block: one more shape of header to mutate
            h = json.loads(data[8:8 + struct.unpack("<Q", data[:8])[0]])
            h = {"__metadata__": meta, **h}
            hb = json.dumps(h, separators=(",", ":")).encode()
            data = struct.pack("<Q", len(hb)) + hb + data[8 + struct.unpack("<Q", data[:8])[0]:]
        put(out, "safetensors", "stories260K-headers.st", b"\0" + data)
    for d in ["stories260K-hf", "stories260K-hf-tied"]:
        c = os.path.join(fx, "models", d, "config.json")
        g = os.path.join(fx, "models", d, "generation_config.json")
        if os.path.exists(c):
            cfg = open(c, "rb").read()
            gen = open(g, "rb").read() if os.path.exists(g) else b""
            put(out, "safetensors", f"config-{d}", b"\1" + cfg + SEP + gen)
            base = json.loads(cfg)
            for mt in ["mistral", "qwen2", "qwen3", "phi3", "qwen3_moe", "gemma2", "gemma3_text", "gemma3n_text"]:
                v = dict(base, model_type=mt, architectures=[mt])
                v.update({"head_dim": 8, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16,
                          "sliding_window": 16, "query_pre_attn_scalar": 8, "rope_scaling": {"rope_type": "linear", "factor": 2.0}})
                put(out, "safetensors", f"config-{mt}", b"\1" + json.dumps(v).encode())
    idx = {"metadata": {"total_size": 24}, "weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                                                          "model.norm.weight": "model-00001-of-00002.safetensors",
                                                          "lm_head.weight": "model-00002-of-00002.safetensors"}}
    put(out, "safetensors", "index-tiny", b"\2" + json.dumps(idx, indent=1).encode())
    p = os.path.join(fx, "models", "stories260K-hf-sharded", "model.safetensors.index.json")
    if os.path.exists(p):
        put(out, "safetensors", "index-stories260K", b"\2" + open(p, "rb").read())


# --- tokenizer.json ------------------------------------------------------------------------------
def shrink_tokenizer(j, keep=256):
    m = j.get("model", {})
    vocab = m.get("vocab")
    if isinstance(vocab, dict):
        m["vocab"] = {k: v for k, v in vocab.items() if isinstance(v, int) and v < keep}
        kept = set(m["vocab"])
        merges = m.get("merges") or []
        small = []
        for mg in merges:
            a, b = (mg.split(" ", 1) if isinstance(mg, str) else mg) if (isinstance(mg, list) or " " in mg) else (mg, "")
            if a in kept and b in kept and (a + b) in kept:
                small.append(mg)
        if "merges" in m:
            m["merges"] = small
    elif isinstance(vocab, list):  # Unigram: [piece, score] pairs
        m["vocab"] = vocab[:keep]
    j["added_tokens"] = [t for t in j.get("added_tokens", []) if t.get("id", 0) < keep]
    return j


def tokenizer_corpus(fx, out):
    dirs = [os.path.join(fx, "models", "stories260K-hf")]
    hf = os.path.join(fx, "tokenizers", "hf")
    if os.path.isdir(hf):
        dirs += [os.path.join(hf, d) for d in sorted(os.listdir(hf))]
    for d in dirs:
        p = os.path.join(d, "tokenizer.json")
        if not os.path.exists(p):
            continue
        j = shrink_tokenizer(json.load(open(p, encoding="utf-8")))
        cfg = b""
        c = os.path.join(d, "tokenizer_config.json")
        if os.path.exists(c):
            cj = json.load(open(c, encoding="utf-8"))
            cj.pop("chat_template", None)
            cj["added_tokens_decoder"] = {k: v for k, v in cj.get("added_tokens_decoder", {}).items() if int(k) < 256}
            cfg = json.dumps(cj).encode()
        name = os.path.basename(d)
        put(out, "tokenizer_json", name, json.dumps(j, ensure_ascii=False).encode() + SEP + cfg)
    # Encode: texts of the fixtures' cases, each for every tokenizer (the first byte picks it).
    texts = []
    for root in [os.path.join(fx, "tokenizers", "gguf"), hf]:
        if not os.path.isdir(root):
            continue
        for dirpath, _, files in os.walk(root):
            for f in sorted(files):
                if f.endswith(".inp"):
                    texts += open(os.path.join(dirpath, f), "rb").read().split(b"\n__ggml_vocab_test__\n")
    texts = sorted(set(t for t in texts if t))[:40]
    for i, t in enumerate(texts):
        put(out, "tokenizer_encode", f"text-{i:02d}", bytes([i % 5 | (0x40 if i % 2 else 0) | (0x80 if i % 3 else 0)]) + t)
    put(out, "tokenizer_encode", "ids", bytes([0x81]) + struct.pack("<8i", 0, 1, 2, 3, 100, 255, -1, 1 << 30))


# --- chat templates ------------------------------------------------------------------------------
def jinja_corpus(fx, out):
    td = os.path.join(fx, "templates")
    ctx_path = os.path.join(td, "contexts.json")
    contexts = json.load(open(ctx_path))["contexts"] if os.path.exists(ctx_path) else [{}]
    if not os.path.isdir(td):
        return
    templates = sorted(f for f in os.listdir(td) if f.endswith(".jinja"))
    for i, f in enumerate(templates):
        src = open(os.path.join(td, f), "rb").read()
        c = dict(contexts[i % len(contexts)])
        c.pop("name", None)
        c.pop("description", None)
        put(out, "jinja", f[:-6], src + SEP + json.dumps(c).encode())
    for i, c in enumerate(contexts):  # every context once, with a small template that walks it
        c = dict(c)
        c.pop("name", None)
        c.pop("description", None)
        put(out, "jinja", f"context-{i:02d}", b"{% for m in messages %}{{ m.role }}: {{ m.content | tojson }}\n"
            b"{% endfor %}{{ tools | tojson(indent=2) if tools }}" + SEP + json.dumps(c).encode())


# --- npy -----------------------------------------------------------------------------------------
def npy(shape, major=1, fortran=False, descr="<f4"):
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    h = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': ({dims}), }}"
    pre = 10 if major == 1 else 12
    h += " " * ((-(pre + len(h) + 1)) % 64) + "\n"
    n = 1
    for d in shape:
        n *= d
    ln = struct.pack("<H", len(h)) if major == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes([major, 0]) + ln + h.encode() + b"\0" * (4 * n)


def npy_corpus(fx, out):
    for i, (shape, major) in enumerate([((), 1), ((3,), 1), ((2, 3), 1), ((1, 2, 2), 2), ((0, 4), 1)]):
        put(out, "npy", f"gen-{i}", npy(shape, major))
    put(out, "npy", "fortran", npy((2, 2), fortran=True))
    put(out, "npy", "f8", npy((2,), descr="<f8"))


def main():
    fx, out = sys.argv[1], sys.argv[2]
    gguf_corpus(fx, out)
    st_corpus(fx, out)
    tokenizer_corpus(fx, out)
    jinja_corpus(fx, out)
    npy_corpus(fx, out)


if __name__ == "__main__":
    main()
