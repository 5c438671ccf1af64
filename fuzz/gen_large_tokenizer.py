#!/usr/bin/env python3
"""Writes a large byte-level-BPE-shaped tokenizer.json, to measure what loading one costs.

  fuzz/gen_large_tokenizer.py N_MERGES OUT.json

64 one-character tokens, then N_MERGES tokens each made of an earlier token plus a character
(merge "<earlier> <char>"), as real vocabularies grow (tokens average ~12 bytes, as Llama 3's do);
half the merges as "a b" strings, half as ["a", "b"] pairs. The same shape as the generator in
src/tokenizer/hf_tokenizer_json_test.cpp, whose test bounds the heap peak; this file is for peak
RSS of a whole program, e.g.
  /usr/bin/time -v build-b/bin/glass tokenize OUT.json "hello"   (Maximum resident set size)
"""
import json
import random
import sys


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    rng = random.Random(29)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
    tokens = list(alphabet)
    seen = set(tokens)
    merges = []
    while len(tokens) < len(alphabet) + n:
        a = tokens[rng.randrange(len(tokens))]
        b = alphabet[rng.randrange(len(alphabet))]
        t = a + b
        if len(t) > 40 or t in seen:
            continue
        seen.add(t)
        merges.append(f"{a} {b}" if len(merges) % 2 == 0 else [a, b])
        tokens.append(t)
    doc = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": len(tokens), "content": "<|end|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None, "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "fuse_unk": False, "byte_fallback": False,
                  "vocab": {t: i for i, t in enumerate(tokens)}, "merges": merges},
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
