#!/usr/bin/env python3
"""Runs glass_constrained_e2e over the schema corpus and validates its outputs independently.

Every generation that ended with finish "stop" must validate against its schema with
python3-jsonschema (formats asserted; time / date-time checked as gen_schema_corpus.py does), and at
least 95% of the generations must end with "stop". Exit 0: pass; 1: fail; 77: skipped (jsonschema
missing — ctest reports the test as skipped; CI counts that as a failure).
"""
import argparse
import json
import os
import subprocess
import sys

try:
    import jsonschema  # noqa: F401
except ImportError:
    print("SKIPPED: python3-jsonschema is not installed (apt install python3-jsonschema)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(__file__))
import gen_schema_corpus as corpus  # noqa: E402


def judge_outputs(path, is_valid):
    """Reads glass_constrained_e2e's output: (generations, ended with stop, invalid, errors, not
    judged). is_valid(name, text) judges an output that ended on its own: True, False, or None where
    the validator itself could not. Each error and invalid output is printed."""
    n = stop = invalid = errors = unjudged = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            n += 1
            if "error" in r:
                errors += 1
                print("error:", r["name"], r["error"])
                continue
            if r["finish"] != "stop":
                continue
            stop += 1
            ok = is_valid(r["name"], r["text"])
            if ok is None:
                unjudged += 1
            elif not ok:
                invalid += 1
                print("INVALID output for", r["name"], ":", r["text"][:500])
    return n, stop, invalid, errors, unjudged


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-tokens", default="3000")
    a = ap.parse_args()
    subprocess.run([a.exe, a.corpus, a.out, a.max_tokens], check=True)
    schemas = {}
    with open(a.corpus, encoding="utf-8") as f:
        for line in f:
            e = json.loads(line)
            schemas[e["name"]] = e["schema"]
    n, stop, invalid, errors, _ = judge_outputs(a.out, lambda name, text: corpus.is_valid(schemas[name], text))
    rate = stop / n if n else 0
    print("%d generations, %d ended with stop (%.1f%%), %d invalid, %d errors" % (n, stop, 100 * rate, invalid, errors))
    ok = n >= 200 and invalid == 0 and errors == 0 and rate >= 0.95
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
