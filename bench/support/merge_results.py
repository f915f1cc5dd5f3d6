#!/usr/bin/env python3
"""Merges the Google Benchmark JSON files of one executable's families into one file.

ci/bench.sh runs a long executable (bench_jit) one family per process, each into a part file,
and merges the parts that finished after each one: a run cut off at a time limit still leaves
<executable>-<state>.json, complete and valid, with every family that finished. The context
is the first part's, with `cujit_families` listing the families merged in order; the
benchmarks are the parts' in that order. A part that is missing or does not parse (its
process was cut off while writing it) is left out and named on stderr. The output is written
to a temporary file and renamed, so a reader never sees half of it.

Usage:
    merge_results.py OUT FAMILY=PART.json [FAMILY=PART.json ...]
    merge_results.py --self-test
"""

import json
import os
import sys
import tempfile


def load_part(path):
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as error:
        return None, str(error)
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list) \
            or not isinstance(data.get("context"), dict):
        return None, "not Google Benchmark JSON"
    return data, ""


def merge(parts):
    """(merged dict or None, [problems]) for [(family, path)]."""
    merged, problems = None, []
    for family, path in parts:
        data, why = load_part(path)
        if data is None:
            problems.append(f"{family}: {path}: {why}")
            continue
        if merged is None:
            merged = {"context": dict(data["context"]), "benchmarks": []}
            merged["context"]["cujit_families"] = []
        merged["context"]["cujit_families"].append(family)
        merged["benchmarks"].extend(data["benchmarks"])
    return merged, problems


def write_atomically(path, data):
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".merge-", suffix=".json", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def main(argv):
    if len(argv) < 2 or any("=" not in part for part in argv[1:]):
        print(__doc__, file=sys.stderr)
        return 2
    parts = [tuple(part.split("=", 1)) for part in argv[1:]]
    merged, problems = merge(parts)
    for problem in problems:
        print(f"merge_results: left out {problem}", file=sys.stderr)
    if merged is None:
        print("merge_results: no part could be read; nothing written", file=sys.stderr)
        return 1
    write_atomically(argv[0], merged)
    return 0


def self_test():
    with tempfile.TemporaryDirectory() as scratch:
        def part(name, text):
            path = os.path.join(scratch, name)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
            return path
        first = part("a.json", json.dumps({"context": {"cujit_schema": 1}, "benchmarks": [{"name": "a/1"}]}))
        second = part("b.json", json.dumps({"context": {"cujit_schema": 1}, "benchmarks": [{"name": "b/1"}]}))
        cut = part("c.json", '{"context": {}, "benchmarks": [{"name": "c/1"}')
        out = os.path.join(scratch, "out.json")
        assert main([out, f"a={first}", f"cut={cut}", f"b={second}",
                     f"gone={os.path.join(scratch, 'none.json')}"]) == 0
        with open(out, encoding="utf-8") as handle:
            data = json.load(handle)
        assert [b["name"] for b in data["benchmarks"]] == ["a/1", "b/1"], data
        assert data["context"]["cujit_families"] == ["a", "b"], data
        assert main([out, f"cut={cut}"]) == 1
        assert [n for n in os.listdir(scratch) if n.startswith(".merge-")] == []
    print("merge_results: self-test passed")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    sys.exit(main(sys.argv[1:]))
