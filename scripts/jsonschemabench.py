#!/usr/bin/env python3
"""glass against JSONSchemaBench (github guidance-ai/jsonschemabench, its data/ folder; not shipped
here): how many schemas compile, why the others are refused, and whether what glass generates for
each compiled one validates (python3-jsonschema, formats asserted).

  python3 scripts/jsonschemabench.py DATA_DIR [--build build-test] [--max-tokens 1500]

Needs the tools built (-DGLASS_BUILD_TOOLS=ON, the default): BUILD/bin/glass_schema_coverage and
BUILD/tests/glass_constrained_e2e (a random-weight model with a JSON-friendly vocabulary).
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

import jsonschema

sys.path.insert(0, os.path.dirname(__file__))
import check_constrained_outputs as check  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--build", default="build-test")
    ap.add_argument("--max-tokens", default="1500")
    a = ap.parse_args()
    paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(a.data) for f in fs if f.endswith(".json"))
    out = subprocess.run([os.path.join(a.build, "bin/glass_schema_coverage")], input="\n".join(paths) + "\n",
                         capture_output=True, text=True, check=True).stdout
    by = collections.defaultdict(lambda: [0, 0])
    why = collections.Counter()
    compiled = []
    times = []
    for line in out.splitlines():
        path, ms, res = line.split("\t", 2)
        group = os.path.relpath(path, a.data).split(os.sep)[0]
        by[group][1] += 1
        times.append(float(ms))
        if res == "ok":
            by[group][0] += 1
            compiled.append(path)
        else:
            why[re.sub(r"at #[^:]*:", "at PATH:", res)[:110]] += 1
    total = sum(n for _, n in by.values())
    ok = sum(o for o, _ in by.values())
    for group, (o, n) in sorted(by.items()):
        print(f"{group:16s} {o:5d}/{n:<5d} {100 * o / n:5.1f}%")
    times.sort()
    print(f"all              {ok:5d}/{total:<5d} {100 * ok / total:5.1f}%  (compile ms: median "
          f"{times[len(times) // 2]:.2f}, p99 {times[int(len(times) * 0.99)]:.1f}, max {times[-1]:.1f})")
    print("refusals, most common first:")
    for m, c in why.most_common(12):
        print(f"  {c:5d}  {m}")
    with tempfile.TemporaryDirectory() as tmp:
        corpus, gens = os.path.join(tmp, "corpus.jsonl"), os.path.join(tmp, "out.jsonl")
        schemas = {}
        with open(corpus, "w") as f:
            for p in compiled:
                try:
                    schemas[p] = json.load(open(p))
                except ValueError:
                    continue
                f.write(json.dumps({"name": p, "schema": schemas[p]}) + "\n")
        subprocess.run([os.path.join(a.build, "tests/glass_constrained_e2e"), corpus, gens, a.max_tokens],
                       check=True, stdout=subprocess.DEVNULL)
        def is_valid(name, text):
            try:
                instance = json.loads(text)
            except ValueError:
                return False
            try:
                cls = jsonschema.validators.validator_for(schemas[name])
                return cls(schemas[name], format_checker=cls.FORMAT_CHECKER).is_valid(instance)
            except Exception:  # the validator's own failures (a few schemas trip it): not judged
                return None

        n, stop, invalid, errors, unchecked = check.judge_outputs(gens, is_valid)
        print(f"generations: {n}, {stop} ended with stop, {invalid} invalid, {errors} errors, {unchecked} "
              "the validator could not judge")
    return 0 if invalid == 0 and errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
