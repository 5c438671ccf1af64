#!/usr/bin/env python3
"""Builds the harnesses' seed corpora from the shared fixtures (scripts/fuzz.sh runs it).

  fuzz/make_corpus.py FIXTURES_DIR OUT_DIR

Writes OUT_DIR/<harness>/<seed> for every harness in fuzz/. Seeds are small on purpose (libFuzzer
mutates small inputs faster and takes its -max_len from them): big fixtures are cut down by a
generator here (vocabularies to their first tokens, safetensors tensors to one element, GGUF
models to their metadata) rather than copied, and a tiny llama GGUF with real tensors is written
so that the graph build runs. The separator between the parts of one input is fuzz_input.h's.
The grammar harnesses' seeds come from the repository itself (llama.cpp's grammars in
src/grammar/testdata/gbnf, the schema corpus tests/grammar/schema_corpus.jsonl) plus hostile cases
written here.
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
    repo_models = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "models")
    for d in [os.path.join(models, "synthetic"), os.path.join(models, "synthetic-arch"),
              os.path.join(repo_models, "synthetic-2026")]:
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


# --- JSON text (glass's parser against nlohmann's) -----------------------------------------------
def json_corpus(fx, out):
    # Every fixture model's config.json, and text on each edge of the grammar: escapes and surrogate
    # pairs, UTF-8 of each length, numbers at the ends of int64 / uint64 / double, a byte-order mark.
    models = os.path.join(fx, "models")
    for d in sorted(os.listdir(models)) if os.path.isdir(models) else []:
        c = os.path.join(models, d, "config.json")
        if os.path.isfile(c):
            put(out, "json", f"config-{d}", open(c, "rb").read()[:8192])
    cases = [
        '{"a": [1, -2, 3.5e-7, true, false, null], "b": {"c": {}}, "d": []}',
        r'"\" \\ \/ \b \f \n \r \t \u0000 \u00e9 \ud83d\ude00"',
        '["h\u00e9llo", "\u20ac", "\U0001f600", "\u4e2d"]',
        "[0, -0, 9223372036854775807, -9223372036854775808, 18446744073709551615, 18446744073709551616]",
        "[1.7976931348623157e308, 4.9e-324, 1e-400, 2.2250738585072014E-308, 0.5e+1]",
        '\ufeff {"bom": 1}\n',
        '{"merges": ["a b", ["c", "d"]], "vocab": {"a": 0, "b": 1}}',
        "[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]",
    ]
    for i, c in enumerate(cases):
        put(out, "json", f"edge-{i}", c)


# --- grammars: GBNF, JSON Schema, regexes, request bodies ----------------------------------------
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Grammars that once cost time or memory out of proportion to their text, and the bounds' edges.
HOSTILE_GBNF = {
    "deep-groups": "root ::= " + "(" * 300 + "\"a\"" + ")" * 300 + "\n",
    "deep-groups-ok": "root ::= " + "(" * 200 + "\"a\"" + ")" * 200 + "\n",
    "repeat-max": "root ::= \"a\"{100000}\n",
    "repeat-over": "root ::= \"a\"{100001}\n",
    "repeat-nested": "root ::= ((\"a\"{1000}){1000}){1000}\n",
    "optional-run": "root ::= [a-z]{0,5000} \"x\"\n",
    "ambiguous": "root ::= (\"x\"?){0,5000} \"x\"\n",
    "left-recursion": "root ::= a\na ::= b \"x\" | \"y\"\nb ::= a\n",
    "nullable-chain": "".join(f"r{i} ::= r{i + 1} r{i + 1}\n" for i in range(24)).replace("r0 ::=", "root ::=")
    + "r24 ::= \"\"\n",
    "nullable-chain-x": "root ::= r1 r1 \"x\"\n" + "".join(f"r{i} ::= r{i + 1} r{i + 1} r{i + 1}\n" for i in range(1, 20))
    + "r20 ::= \"a\"?\n",
    "undefined": "root ::= missing\n",
    "utf8-classes": "root ::= [\\u0080-\\U0010FFFF]+ [^\\x00-\\x7F]* [\\xC0-\\xFF] \"\\xff\"\n",
    "escapes": "root ::= \"\\x00\\n\\r\\t\\\\\\\"\\u00e9\\U0001F600\" [\\]\\[\\-^]\n",
    "continuation": "root ::= \"a\"\n  | \"b\" (\n \"c\"\n ) # comment\n",
}

HOSTILE_REGEX = [
    ("digits", "^\\+?[0-9]{7,12}$", "+1234567890"),
    ("email", "[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}", "a.b@example.com"),
    ("groups", "(?:ab|cd)+(?<n>x|y)?(?P<m>z*)", "abcdx"),
    ("classes", "[^a-z\\d\\s][\\w-]{2,4}\\S\\D\\W", "A_-x1a!"),
    ("escapes", "\\x41\\u00e9\\n\\t\\0\\.\\*\\/", "A\u00e9\n\t\0.*/"),
    ("lazy", "a*?b+?c??d{2,}?", "bbdd"),
    ("nested-repeat", "((a{100}){100}){100}", ""),
    ("repeat-over", "a{100001}", ""),
    ("deep", "(" * 300 + "a" + ")" * 300, "a"),
    ("empty-alts", "(|a|)(|)*", "a"),
    ("lookahead", "a(?=b)", "ab"),
    ("backref", "(a)\\1", "aa"),
    ("anchors-inside", "a^b$c", "abc"),
    ("utf8", "[\u00e9-\u00ff\U0001F600]+.", "\u00e9\u00ff!"),
]


def grammar_corpus(fx, out):
    gdir = os.path.join(REPO, "src", "grammar", "testdata", "gbnf")
    if os.path.isdir(gdir):
        for f in sorted(os.listdir(gdir)):
            if f.endswith(".gbnf"):
                g = open(os.path.join(gdir, f), "rb").read()
                put(out, "gbnf", f[:-5], g)
                put(out, "gbnf", f[:-5] + "-driven", g + SEP + bytes(range(7, 200, 3)))
    for name, g in HOSTILE_GBNF.items():
        put(out, "gbnf", "hostile-" + name, g)
    schemas = []
    corpus = os.path.join(REPO, "tests", "grammar", "schema_corpus.jsonl")
    if os.path.exists(corpus):
        for line in open(corpus, encoding="utf-8"):
            if line.strip():
                schemas.append(json.loads(line))
    for i, case in enumerate(schemas):
        valid = case.get("valid") or [""]
        put(out, "json_schema", f"{i:03d}-{case.get('name', 'schema')}",
            json.dumps(case["schema"]).encode() + SEP + valid[0].encode())
    # Hostile schemas: references that expand exponentially, deep nesting, the bounds' edges.
    refs = {"$defs": {f"a{i}": {"allOf": [{"$ref": f"#/$defs/a{i + 1}"}, {"$ref": f"#/$defs/a{i + 1}"}]}
                      for i in range(20)}}
    refs["$defs"]["a20"] = {"type": "object"}
    put(out, "json_schema", "hostile-allof-refs", json.dumps(dict(refs, allOf=[{"$ref": "#/$defs/a0"}])))
    any_refs = {"$defs": {f"a{i}": {"anyOf": [{"$ref": f"#/$defs/a{i + 1}", "type": "object"},
                                              {"$ref": f"#/$defs/a{i + 1}", "type": "object"}]}
                          for i in range(40)}}
    any_refs["$defs"]["a40"] = {"type": "object"}
    put(out, "json_schema", "hostile-anyof-refs", json.dumps(dict(any_refs, **{"$ref": "#/$defs/a0", "type": "object"})))
    deep = {"type": "string"}
    for _ in range(140):
        deep = {"type": "array", "items": deep}
    put(out, "json_schema", "hostile-deep", json.dumps(deep))
    put(out, "json_schema", "hostile-deep-text", b"[" * 200 + b"]" * 200)
    put(out, "json_schema", "hostile-recursive", json.dumps(
        {"$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"}))
    put(out, "json_schema", "hostile-lengths", json.dumps(
        {"type": "object", "properties": {f"p{i}": {"type": "string", "minLength": i, "maxLength": 10000}
                                          for i in range(8)}}))
    put(out, "json_schema", "hostile-items", json.dumps({"type": "array", "minItems": 1000, "maxItems": 1000,
                                                         "items": {"type": "array", "maxItems": 1000}}))
    put(out, "json_schema", "hostile-numbers", json.dumps(
        {"anyOf": [{"type": "integer", "minimum": -9007199254740993, "maximum": 9007199254740993},
                   {"type": "number", "exclusiveMinimum": 1e-300, "exclusiveMaximum": 1e300}]}))
    for name, pattern, sample in HOSTILE_REGEX:
        put(out, "regex", name, pattern.encode() + SEP + sample.encode())
    for case in schemas:
        stack = [case["schema"]]
        while stack:
            x = stack.pop()
            if isinstance(x, dict):
                if isinstance(x.get("pattern"), str):
                    h = hashlib.sha1(x["pattern"].encode()).hexdigest()[:8]
                    put(out, "regex", "schema-" + h, x["pattern"])
                stack.extend(x.values())
            elif isinstance(x, list):
                stack.extend(x)
    http_corpus(schemas, out)


def http_corpus(schemas, out):
    def body(kind, obj):
        put(out, "http_body", kind[0] + "-" + kind[1], bytes([kind[2]]) + json.dumps(obj).encode())

    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{\"q\": [1, {\"a\": null}]}"}}]},
            {"role": "tool", "tool_call_id": "c1", "name": "get", "content": "42"},
            {"role": "developer", "content": "x"}]
    tools = [{"type": "function", "function": {"name": "get", "description": "d", "parameters": {
        "type": "object", "properties": {"q": {"type": "string", "maxLength": 8}}, "required": ["q"]}}},
             {"type": "function", "function": {"name": "put"}}]
    sampling = {"temperature": 0.7, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": -1, "n": 2,
                "presence_penalty": 0.5, "frequency_penalty": -0.5, "stop": ["\n", "END"], "max_tokens": 16,
                "logit_bias": {"1": -100, "2": 5.5}, "stream": True, "stream_options": {"include_usage": True}}
    body(("chat", "basic", 0), {"model": "m", "messages": msgs, **sampling})
    body(("chat", "logprobs", 0), {"messages": msgs[:2], "logprobs": True, "top_logprobs": 5,
                                   "max_completion_tokens": 4, "echo": False, "best_of": 1})
    body(("chat", "tools-required", 0), {"messages": msgs, "tools": tools, "tool_choice": "required",
                                         "parallel_tool_calls": False})
    body(("chat", "tools-named", 0), {"messages": msgs, "tools": tools,
                                      "tool_choice": {"type": "function", "function": {"name": "get"}}})
    body(("chat", "tools-auto", 0), {"messages": msgs, "tools": tools, "tool_choice": "auto"})
    body(("chat", "json-object", 0), {"messages": msgs[:2], "response_format": {"type": "json_object"}})
    body(("chat", "grammar", 0), {"messages": msgs[:2], "grammar": "root ::= [a-z]{1,8} (\" \" [0-9]+)?"})
    body(("chat", "text-and-schema", 0), {"messages": msgs[:2], "response_format": {"type": "text"},
                                          "json_schema": {"type": "integer", "minimum": 3, "maximum": 70}})
    for i, case in enumerate(schemas[:12]):
        body(("chat", f"schema-{i:02d}", 0), {"messages": msgs[:2], "response_format": {
            "type": "json_schema", "json_schema": {"name": "x", "strict": True, "schema": case["schema"]}}})
    body(("completion", "text", 1), {"prompt": "Once upon a time", "logprobs": 3, **sampling})
    body(("completion", "ids", 1), {"prompt": [[1, 2, 3, 511]], "max_tokens": 2, "suffix": ""})
    body(("completion", "grammar", 1), {"prompt": ["x"], "grammar": "root ::= \"yes\" | \"no\""})
    body(("tokenize", "basic", 2), {"content": "Hello <s> world", "add_special": True, "parse_special": False})
    body(("detokenize", "basic", 3), {"tokens": [1, 2, 3, 511, 5.0]})
    replies = ["Sure.<tool_call>\n{\"name\": \"get\", \"arguments\": {\"q\": \"x\"}}\n</tool_call>\n<tool_call>\n"
               "{\"name\": \"put\", \"arguments\": \"{}\"}\n</tool_call>",
               "<|python_tag|>{\"name\": \"get\", \"parameters\": {\"q\": \"x\"}}",
               "[{\"name\": \"get\", \"parameters\": {}}, {\"name\": \"put\", \"arguments\": {}}]",
               "[TOOL_CALLS] [{\"name\": \"get\", \"arguments\": {\"q\": 1}}]",
               "[TOOL_CALLS]get[ARGS]{\"q\": 1}[TOOL_CALLS]put[ARGS]{}",
               "plain text <tool_ca",
               "<think>\nweigh it\n</think>\n\nAnswer <tool_call>\n<function=f>\n<parameter=s>\n1\n</parameter>\n"
               "</function>\n</tool_call>",
               "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant to=functions.f<|channel|>commentary "
               "json<|message|>{\"s\": \"x\"}<|call|>"]
    for i, r in enumerate(replies):
        put(out, "http_body", f"reply-{i}", bytes([4]) + r.encode())


# --- HTTP requests as a connection delivers them ---------------------------------------------------
def http_request_corpus(out):
    host = "Host: 127.0.0.1:8080\r\n"
    json_body = b'{"prompt": "Once upon a time", "max_tokens": 8}'

    def post(path, body, extra=""):
        return (f"POST {path} HTTP/1.1\r\n{host}Content-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n{extra}\r\n").encode() + body

    cases = {
        "get-health": f"GET /health HTTP/1.1\r\n{host}\r\n".encode(),
        "post-completion": post("/v1/completions", json_body),
        "pipelined": post("/v1/completions", json_body) + f"GET /v1/models HTTP/1.1\r\n{host}\r\n".encode(),
        "chunked": (f"POST /v1/chat/completions HTTP/1.1\r\n{host}Content-Type: application/json\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n5;x=1\r\n{\"a\":\r\n2\r\n1}\r\n0\r\nX-T: 1\r\n\r\n").encode(),
        "two-lengths": post("/v1/completions", json_body, "Content-Length: 3\r\n"),
        "length-and-chunked": post("/v1/completions", json_body, "Transfer-Encoding: chunked\r\n"),
        "gzip": post("/v1/completions", json_body, "Content-Encoding: gzip\r\n"),
        "cors": post("/v1/completions", json_body, "Origin: https://app.example\r\n"),
        "rebinding": b"GET /v1/models HTTP/1.1\r\nHost: evil.example\r\n\r\n",
        "preflight": (f"OPTIONS /v1/chat/completions HTTP/1.1\r\n{host}Origin: https://app.example\r\n"
                      "Access-Control-Request-Method: POST\r\n\r\n").encode(),
        "http10": b"GET /health HTTP/1.0\r\n\r\n",
        "expect": post("/v1/completions", json_body, "Expect: 100-continue\r\n"),
        "folded": f"GET /health HTTP/1.1\r\n{host}X-A: one\r\n two\r\n\r\n".encode(),
    }
    for name, data in cases.items():
        put(out, "http_request", name, data)


def main():
    fx, out = sys.argv[1], sys.argv[2]
    gguf_corpus(fx, out)
    st_corpus(fx, out)
    tokenizer_corpus(fx, out)
    jinja_corpus(fx, out)
    npy_corpus(fx, out)
    json_corpus(fx, out)
    grammar_corpus(fx, out)
    http_request_corpus(out)


if __name__ == "__main__":
    main()
