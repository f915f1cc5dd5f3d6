#!/usr/bin/env python3
"""Writes the figures the docs quote from the results committed under docs/results/.

A generated region of README.md or docs/*.md is marked
    <!-- figures:NAME -->...<!-- /figures -->
(inline within a sentence, or around lines); this script replaces what lies between the
markers with the output of the generator NAME below, so no quoted figure is typed by hand.

Usage:
    ci/doc_figures.py                  rewrite the regions in place
    ci/doc_figures.py --check          exit 1 (with a diff) when a committed doc differs
    ci/doc_figures.py --self-test      show that a stale figure is caught
    ci/doc_figures.py --count-tests BUILD_DIR --out docs/results/FILE.json
                                       record the conformance tests of a build (ctest -N),
                                       which the README's sample run is rendered from
"""

import argparse
import collections
import difflib
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REGION = re.compile(r"(<!-- figures:(?P<name>[\w-]+) -->)(?P<body>.*?)(<!-- /figures -->)", re.S)
REDUCE_RESULTS = "docs/results/2026-11-24-h100-issue15/reduce"
BEFORE_MEMO_RESULTS = "docs/results/2026-11-24-h100"
TEST_COUNTS = "docs/results/2026-11-26-cpu-test-counts.json"


def significant(value, digits=3):
    """3 significant figures, no exponent (0.6266 -> 0.627, 189.58 -> 190, 1.0186 -> 1.02)."""
    text = f"{value:#.{digits}g}"
    if "e" in text:
        text = f"{value:.0f}"
    return text.rstrip(".")


def reduce_build_medians(root, results, family, unit):
    """The medians of cujit/reduce_build/<family> in `unit`, cold then vendor-cache-warm."""
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
    figures = []
    for state in ("cold", "vendor-cache-warm"):
        data = json.loads((root / results / f"bench_reduce-{state}.json").read_text())
        medians = [benchmark for benchmark in data["benchmarks"]
                   if benchmark.get("aggregate_name") == "median"
                   and benchmark["name"].startswith(f"cujit/reduce_build/{family}/")]
        if len(medians) != 1:
            raise SystemExit(f"doc_figures: {results}/bench_reduce-{state}.json has "
                             f"{len(medians)} medians of cujit/reduce_build/{family}")
        in_us = medians[0]["real_time"] * scale[medians[0]["time_unit"]]
        figures.append(significant(in_us / scale[unit]))
    return figures


def reduce_cache_hits(root):
    """cache.md: the reduce hits with the memo (issue 15 H100 run), both vendor-cache states."""
    memory = reduce_build_medians(root, REDUCE_RESULTS, "memory_hit", "us")
    disk = reduce_build_medians(root, REDUCE_RESULTS, "disk_hit", "us")
    new_process = reduce_build_medians(root, REDUCE_RESULTS, "disk_hit_new_process", "ms")
    return (f"memory hit {memory[0]} us (cold state) / {memory[1]} us (vendor-cache-warm "
            f"state), disk hit through a fresh cache object {disk[0]} / {disk[1]} us, disk "
            f"hit in a new process (context first, to loaded kernels) {new_process[0]} / "
            f"{new_process[1]} ms")


def reduce_memory_hit(root):
    """cache.md: the reduce's memo recall, cold state of the issue 15 H100 run."""
    return f"{reduce_build_medians(root, REDUCE_RESULTS, 'memory_hit', 'us')[0]} us"


def reduce_memory_hit_before_memo(root):
    """cache.md: the reduce memory hit of the H100 run before the memo and issue 15."""
    cold, warm = reduce_build_medians(root, BEFORE_MEMO_RESULTS, "memory_hit", "ms")
    return f"{cold} ms (vendor cache off) / {warm} ms (on)"


def readme_sample_run(root):
    """The end of `ci/run.sh` without a GPU, in the format cli/conformance.cpp prints."""
    counts = json.loads((root / TEST_COUNTS).read_text())
    out = "cujit-out/" + counts["stamp"]
    lines = ["```", f"{'area':<16}{'passed':>8}{'failed':>8}{'skipped':>9}"]
    passed = skipped = 0
    for area, tests in sorted(counts["areas"].items()):
        lines.append(f"{area:<16}{tests['cpu']:>8}{0:>8}{tests['gpu']:>9}")
        passed += tests["cpu"]
        skipped += tests["gpu"]
    lines += [f"{'total':<16}{passed:>8}{0:>8}{skipped:>9}",
              f"skipped {skipped}: no CUDA device (libcuda.so.1 could not be loaded (...))",
              f"JUnit XML: {out}/conformance/junit",
              f"conformance: {passed} passed, 0 failed, {skipped} skipped",
              "== cujit run: step 2 of 3: benchmarks (... s)",
              "[1/2] bench bench_jit (quick)",
              "[2/2] bench bench_reduce (quick)",
              f"benchmarks: {out}/bench",
              "== cujit run: step 3 of 3: report (... s)",
              f"report: {out}/report/report.html",
              f"cujit run: everything is in /work/main/{out}",
              f"  conformance: {out}/conformance",
              f"  benchmarks:  {out}/bench",
              f"  report:      {out}/report/report.html",
              "```"]
    return ("\n" + f"The tests of a build at commit {counts['commit']}, counted with `ctest -N` "
            f"(`{TEST_COUNTS}`): without a GPU every `cpu` test passes and every `gpu` test "
            "skips.\n\n" + "\n".join(lines) + "\n")


SESSION42_RESULTS = "docs/results/2026-11-28-h200-session42/run2"


def reduce_backends_table(root, *names):
    """reports/reduce_backends.py over committed bench_reduce JSON files, as it prints."""
    script = root / "reports" / "reduce_backends.py"
    files = [str(root / SESSION42_RESULTS / name) for name in names]
    done = subprocess.run([sys.executable, str(script), *files], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"doc_figures: reduce_backends.py failed: {done.stderr}")
    return "\n" + done.stdout


def reduce_backends_h200_cold(root):
    """reduce.md: both backends against AOT CUB (with the argmin pair) and the cold builds."""
    return reduce_backends_table(root, "reduce-into.json", "reduce-build-cold.json")


def reduce_backends_h200_warm(root):
    """reduce.md: the builds with the vendor caches on."""
    return reduce_backends_table(root, "reduce-build-warm.json")


GENERATORS = {
    "reduce-backends-h200-cold": reduce_backends_h200_cold,
    "reduce-backends-h200-warm": reduce_backends_h200_warm,
    "reduce-cache-hits": reduce_cache_hits,
    "reduce-memory-hit": reduce_memory_hit,
    "reduce-memory-hit-before-memo": reduce_memory_hit_before_memo,
    "readme-sample-run": readme_sample_run,
}


def docs_of(root):
    return [root / "README.md"] + sorted((root / "docs").glob("*.md"))


def rendered(root, text, where):
    def replace(match):
        name = match.group("name")
        if name not in GENERATORS:
            raise SystemExit(f"doc_figures: {where}: no generator for figures:{name}")
        return match.group(1) + GENERATORS[name](root) + match.group(4)
    return REGION.sub(replace, text)


def check(root, write):
    stale = 0
    for doc in docs_of(root):
        if not doc.is_file():
            continue
        text = doc.read_text()
        new = rendered(root, text, doc.name)
        if new == text:
            continue
        if write:
            doc.write_text(new)
            print(f"doc_figures: rewrote {doc.relative_to(root)}")
        else:
            stale += 1
            sys.stdout.writelines(difflib.unified_diff(
                text.splitlines(True), new.splitlines(True), f"{doc.relative_to(root)} (committed)",
                f"{doc.relative_to(root)} (from docs/results)"))
    if stale:
        print(f"doc_figures: {stale} doc(s) quote figures that differ from docs/results; "
              "run ci/doc_figures.py")
        return 1
    if not write:
        print("doc_figures: every generated figure matches docs/results")
    return 0


def self_test(root):
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch)
        (copy / "docs").mkdir()
        for results in (REDUCE_RESULTS, BEFORE_MEMO_RESULTS):
            (copy / results).mkdir(parents=True, exist_ok=True)
            for path in (root / results).glob("bench_reduce-*.json"):
                (copy / results / path.name).write_text(path.read_text())
        (copy / TEST_COUNTS).write_text((root / TEST_COUNTS).read_text())
        doc = copy / "docs" / "page.md"
        doc.write_text("The hits: <!-- figures:reduce-cache-hits -->typed by hand<!-- /figures -->.\n")
        (copy / "README.md").write_text("<!-- figures:readme-sample-run --><!-- /figures -->\n")
        if check(copy, write=False) != 1:
            print("doc_figures self-test: a hand-typed figure was NOT caught")
            return 1
        check(copy, write=True)
        if check(copy, write=False) != 0 or "memory hit" not in doc.read_text():
            print("doc_figures self-test: the rewritten doc does not match")
            return 1
    print("doc_figures self-test: a stale figure was caught and the rewrite matches")
    return 0


def count_tests(build, out):
    listing = json.loads(subprocess.run(
        ["ctest", "--test-dir", str(build), "--show-only=json-v1"], capture_output=True,
        text=True, check=True).stdout)
    areas = collections.defaultdict(lambda: {"cpu": 0, "gpu": 0})
    for test in listing["tests"]:
        command = test.get("command") or [""]
        executable = Path(command[0]).name
        labels = next((p["value"] for p in test.get("properties", []) if p["name"] == "LABELS"), [])
        if executable.startswith("conformance_"):
            areas[executable.removeprefix("conformance_")]["gpu" if "gpu" in labels else "cpu"] += 1
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, check=False).stdout.strip()
    stamp = subprocess.run(["date", "-u", "+%Y%m%dT%H%M%SZ"], capture_output=True, text=True,
                           check=True).stdout.strip()
    out.write_text(json.dumps({"commit": commit, "stamp": stamp, "build": str(build),
                               "counted_by": "ctest --show-only=json-v1, by executable and label",
                               "areas": dict(sorted(areas.items()))}, indent=2) + "\n")
    print(f"doc_figures: {sum(a['cpu'] for a in areas.values())} cpu and "
          f"{sum(a['gpu'] for a in areas.values())} gpu conformance tests into {out}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=REPO)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("--count-tests", type=Path, metavar="BUILD_DIR")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.count_tests:
        return count_tests(args.count_tests, args.out or args.root / TEST_COUNTS)
    if args.self_test:
        return self_test(args.root.resolve())
    return check(args.root.resolve(), write=not args.check)


if __name__ == "__main__":
    sys.exit(main())
