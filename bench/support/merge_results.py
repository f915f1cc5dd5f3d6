#!/usr/bin/env python3
"""Merges the Google Benchmark JSON files of one executable's families into one file.

ci/bench.sh runs a long executable (bench_jit) one family per process, each into a part file,
and merges the parts that finished after each one: a run cut off at a time limit still leaves
<executable>-<state>.json, complete and valid, with every family that finished. The context
is the first part's, with `cujit_families` listing the families merged in order and
`cujit_parts` each part's family, file, commit and tree (an audit can tell where every part
came from); the benchmarks are the parts' in that order. A part that is missing or does not
parse (its process was cut off while writing it) is left out and named on stderr. The output
is written to a temporary file and renamed, so a reader never sees half of it.

A merged file has one run record, so the parts must be one run. Parts whose records differ in
a field the reports compare (joining.RUN_RECORD in reports/cujit_reports: commit, tree, device,
driver, toolkit libraries, vendor-cache state, ...) are refused, exit 2, each value named with
its parts. --allow-mixed-commits merges parts of different commits and trees: the context's
commit and tree then read "mixed: ..." and `cujit_parts` says which part holds which. A
benchmark in two parts is always refused: families are disjoint, so it means a part was given
twice or came from another run, and a merged file would hold two measurements under one name.
Nothing is written on a refusal; an earlier merged file stays as it was.

Usage:
    merge_results.py [--allow-mixed-commits] OUT FAMILY=PART.json [FAMILY=PART.json ...]
    merge_results.py --self-test
"""

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
from dataclasses import dataclass

# The reports' own definition of "one run", so that what merges quietly here is what the
# report, the history and the gate join quietly (reports/cujit_reports/joining.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "reports"))
from cujit_reports import bench_json, joining  # noqa: E402

MIXED = "mixed: "


@dataclass
class Part:
    family: str
    path: str
    context: dict
    entries: list  # the part's Google Benchmark entries, in its order

    @property
    def label(self):
        return f"{self.family}={self.path}"

    def names(self):
        """Base names (bench_json's, as the reports key them) of the part's benchmarks."""
        return {bench_json.base_name(str(entry.get("run_name") or entry.get("name")))
                for entry in self.entries if isinstance(entry, dict)}


def load_part(family, path):
    """(Part, "") or (None, why): a part cut off mid-write does not parse."""
    try:
        data = bench_json.parse_json(path, bench_json.read_text(path))
    except bench_json.SchemaError as error:
        return None, str(error)
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list) \
            or not isinstance(data.get("context"), dict):
        return None, "not Google Benchmark JSON"
    return Part(family, path, data["context"], data["benchmarks"]), ""


def record_problems(parts, allow_mixed_commits):
    """Lines saying how the parts' run records differ; empty when they may merge."""
    groups = joining.records(parts)
    fields = joining.differing(groups)
    refused = [label for label, key in fields if not (allow_mixed_commits and key in joining.COMMIT_FIELDS)]
    if not refused:
        return []
    commits_only = all(key in joining.COMMIT_FIELDS for _, key in fields)
    lines = [f"the parts are not one run: they differ in {', '.join(refused)}"
             + ("; --allow-mixed-commits merges them, recording each part's commit" if commits_only else "")]
    lines += [f"  {joining.record_text(group[0], fields)}: {', '.join(part.label for part in group)}"
              for group in groups]
    return lines


def overlap_problems(parts):
    """Lines naming every benchmark two parts both hold; empty when none does."""
    clashes, seen = [], {}  # seen: base name -> the first part holding it
    for part in parts:
        for name in sorted(part.names()):
            if name in seen:
                clashes.append(f"  {name}: {seen[name].label} and {part.label}")
            else:
                seen[name] = part
    if not clashes:
        return []
    return [f"{len(clashes)} benchmarks are in two parts, and a merged file holds one measurement of each:"] + clashes


def mixed_value(parts, key):
    """The parts' one value of `key`, or 'mixed: a, b' naming each distinct value once."""
    values = []
    for part in parts:
        value = part.context.get(key)
        if not any(joining.same_value(key, value, seen) for seen in values):
            values.append(value)
    if len(values) == 1:
        return values[0]
    return MIXED + ", ".join("not recorded" if value is None else str(value) for value in values)


def merge(parts):
    """The merged dict of Parts already checked to be one run (commits aside)."""
    context = dict(parts[0].context)
    for key in joining.COMMIT_FIELDS:
        if key in context or any(key in part.context for part in parts):
            context[key] = mixed_value(parts, key)
    context["cujit_families"] = [part.family for part in parts]
    context["cujit_parts"] = [{"family": part.family, "file": part.path,
                               "commit": part.context.get("cujit_git_commit"),
                               "tree": part.context.get("cujit_git_tree"),
                               "digest": part.context.get("cujit_source_digest"),
                               "benchmarks": len(part.entries)} for part in parts]
    return {"context": context, "benchmarks": [entry for part in parts for entry in part.entries]}


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


def family_part(text):
    family, separator, path = text.partition("=")
    if not separator or not family or not path:
        raise argparse.ArgumentTypeError(f"{text!r} is not FAMILY=PART.json")
    return family, path


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="merge_results.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--allow-mixed-commits", action="store_true",
                        help="merge parts of different commits and trees, recording each part's")
    parser.add_argument("out", metavar="OUT")
    parser.add_argument("parts", metavar="FAMILY=PART.json", nargs="+", type=family_part)
    return parser.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    parts = []
    for family, path in args.parts:
        part, why = load_part(family, path)
        if part is None:
            print(f"merge_results: left out {family}: {path}: {why}", file=sys.stderr)
        else:
            parts.append(part)
    if not parts:
        print("merge_results: no part could be read; nothing written", file=sys.stderr)
        return 1
    problems = record_problems(parts, args.allow_mixed_commits) + overlap_problems(parts)
    if problems:
        for line in problems:
            print(f"merge_results: {line}" if not line.startswith("  ") else line, file=sys.stderr)
        print(f"merge_results: nothing written to {args.out}", file=sys.stderr)
        return 2
    write_atomically(args.out, merge(parts))
    return 0


def self_test():
    with tempfile.TemporaryDirectory() as scratch:
        def part(name, text):
            path = os.path.join(scratch, name)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
            return path

        def bench(name, commit="1bcd7b6", tree="clean", device="H100", names=None, digest="1111111111111111"):
            context = {"cujit_schema": "1", "cujit_git_commit": commit, "cujit_git_tree": tree, "device": device,
                       "cujit_source_digest": digest, "vendor_cache": "cold",
                       "date": f"2026-11-26T19:{len(name):02d}:00+00:00"}
            entries = [{"name": n, "run_name": n.rsplit("_", 1)[0] if n.endswith("_median") else n}
                       for n in (names or [f"{name}/1"])]
            return part(f"{name}.json", json.dumps({"context": context, "benchmarks": entries}))

        def run(argv):
            """(exit status, stderr) of main(argv)."""
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                try:
                    status = main(argv)
                except SystemExit as exit_:
                    status = exit_.code
            return status, err.getvalue()

        def read(path):
            with open(path, encoding="utf-8") as handle:
                return json.load(handle)

        out = os.path.join(scratch, "out.json")
        # ci/bench.sh's flow: one run's families merged again after each one finishes, quietly.
        # The date differs between parts of one run; a commit matches its own abbreviation.
        first = bench("a", names=["a/1/repeats:3", "a/1/repeats:3", "a/1/repeats:3_median"])
        second = bench("b", commit="1bcd7b6f00d")
        assert run([out, f"a={first}"]) == (0, "")
        assert run([out, f"a={first}", f"b={second}"]) == (0, "")
        data = read(out)
        assert [b["name"] for b in data["benchmarks"]] == ["a/1/repeats:3"] * 2 + ["a/1/repeats:3_median", "b/1"], data
        assert data["context"]["cujit_families"] == ["a", "b"], data
        assert data["context"]["cujit_git_commit"] == "1bcd7b6", data
        assert data["context"]["cujit_parts"] == [
            {"family": "a", "file": first, "commit": "1bcd7b6", "tree": "clean", "digest": "1111111111111111",
             "benchmarks": 3},
            {"family": "b", "file": second, "commit": "1bcd7b6f00d", "tree": "clean", "digest": "1111111111111111",
             "benchmarks": 1}], data
        # A part cut off mid-write, or never written, is left out and named; the rest merge.
        cut = part("c.json", '{"context": {}, "benchmarks": [{"name": "c/1"}')
        status, err = run([out, f"a={first}", f"cut={cut}", f"b={second}",
                           f"gone={os.path.join(scratch, 'none.json')}"])
        assert status == 0 and "left out cut" in err and "left out gone" in err, err
        assert read(out)["context"]["cujit_families"] == ["a", "b"]
        assert run([out, f"cut={cut}"])[0] == 1
        before = read(out)

        # Another commit: refused, both files and both values named, nothing written.
        other = bench("other", commit="259fe94", tree="modified", digest="2222222222222222")
        status, err = run([out, f"a={first}", f"other={other}"])
        assert status == 2, (status, err)
        assert "differ in commit, tree, source digest; --allow-mixed-commits" in err, err
        assert f"commit 1bcd7b6, tree clean, source digest 1111111111111111: a={first}" in err, err
        assert f"commit 259fe94, tree modified, source digest 2222222222222222: other={other}" in err, err
        assert read(out) == before
        # ... merged when allowed, with every part's commit and tree in the record.
        assert run(["--allow-mixed-commits", out, f"a={first}", f"b={second}", f"other={other}"]) == (0, "")
        context = read(out)["context"]
        assert context["cujit_git_commit"] == "mixed: 1bcd7b6, 259fe94", context
        assert context["cujit_git_tree"] == "mixed: clean, modified", context
        assert [(p["family"], p["commit"], p["tree"]) for p in context["cujit_parts"]] == [
            ("a", "1bcd7b6", "clean"), ("b", "1bcd7b6f00d", "clean"), ("other", "259fe94", "modified")], context

        # One commit recorded for two codes (a copied tree's stale HEAD): the digests tell.
        copied = bench("copied", digest="3333333333333333")
        status, err = run([out, f"a={first}", f"copied={copied}"])
        assert status == 2 and "differ in source digest" in err, err
        assert run(["--allow-mixed-commits", out, f"a={first}", f"copied={copied}"]) == (0, "")
        context = read(out)["context"]
        assert context["cujit_source_digest"] == "mixed: 1111111111111111, 3333333333333333", context
        assert [p["digest"] for p in context["cujit_parts"]] == ["1111111111111111", "3333333333333333"], context

        # Another device is refused even with --allow-mixed-commits, which covers commits only.
        elsewhere = bench("elsewhere", device="H200")
        status, err = run(["--allow-mixed-commits", out, f"a={first}", f"elsewhere={elsewhere}"])
        assert status == 2 and "differ in device\n" in err and "--allow-mixed-commits merges" not in err, err
        assert f"device H100: a={first}" in err and f"device H200: elsewhere={elsewhere}" in err, err

        # A benchmark in two parts (by base name, as the reports key it): refused, both named.
        again = bench("again", names=["b/1", "a/1/repeats:9"])
        status, err = run([out, f"a={first}", f"b={second}", f"again={again}"])
        assert status == 2 and "2 benchmarks are in two parts" in err, err
        assert f"  a/1: a={first} and again={again}" in err and f"  b/1: b={second} and again={again}" in err, err
        assert run([out, f"a={first}", f"a={first}"])[0] == 2

        # Usage: a part without FAMILY= is an error, exit 2.
        assert run([out, first])[0] == 2
        assert [n for n in os.listdir(scratch) if n.startswith(".merge-")] == []
    print("merge_results: self-test passed")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    sys.exit(main(sys.argv[1:]))
