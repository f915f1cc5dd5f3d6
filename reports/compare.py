#!/usr/bin/env python3
"""Regression gate: baseline vs current benchmark JSON.

Per benchmark in both: the change of the median, the noise (cv) on both sides, a
Mann-Whitney U test over the repetitions, and a verdict: slower / faster when the change
passes the threshold and the test is significant, else same. Prints a markdown table;
exits 1 when anything is slower, 0 otherwise, 2 on input it cannot use (a file that is
not benchmark JSON, a missing or mistyped field, a NaN, infinite or negative time, no
benchmark in both files) and on any failure of its own, which is never a verdict.
"""
import argparse
import math
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cujit_reports import bench_json  # noqa: E402
from cujit_reports.stats import mann_whitney_u  # noqa: E402

ALPHA = 0.05


def compare(baseline, current, threshold):
    rows = []
    for name in sorted(set(baseline) & set(current)):
        b, c = baseline[name], current[name]
        if b.error or c.error or not b.median or not c.median:
            continue
        change = (c.median - b.median) / b.median
        _, p = mann_whitney_u(b.samples, c.samples)
        if change > threshold and p < ALPHA:
            verdict = "slower"
        elif change < -threshold and p < ALPHA:
            verdict = "faster"
        else:
            verdict = "same"
        rows.append({"name": name, "baseline": b.median, "current": c.median, "change": change,
                     "noise": max(b.cv or 0.0, c.cv or 0.0), "p": p, "verdict": verdict,
                     "repetitions": (len(b.samples), len(c.samples))})
    return rows


def _time(seconds):
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def markdown(rows, threshold):
    slower = sum(r["verdict"] == "slower" for r in rows)
    faster = sum(r["verdict"] == "faster" for r in rows)
    lines = [f"**{slower} slower, {faster} faster, {len(rows) - slower - faster} same** "
             f"(threshold {threshold:.0%}, Mann-Whitney U, alpha {ALPHA})", "",
             "| benchmark | baseline | current | change | noise | p | verdict |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| `{r['name']}` | {_time(r['baseline'])} | {_time(r['current'])} | "
                     f"{r['change']:+.1%} | {r['noise']:.1%} | {r['p']:.3f} | {r['verdict']} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline")
    parser.add_argument("current")
    parser.add_argument("--threshold", type=float, default=0.05,
                        help="relative slowdown of the median that fails (default 0.05)")
    parser.add_argument("--markdown", help="also write the table here")
    args = parser.parse_args(argv)
    if not math.isfinite(args.threshold) or args.threshold < 0:
        # NaN would make every comparison false: a gate that always passes.
        parser.error(f"--threshold must be a finite number >= 0, not {args.threshold}")
    try:
        baseline = bench_json.load(args.baseline).benchmarks
        current = bench_json.load(args.current).benchmarks
    except bench_json.SchemaError as error:
        print(f"compare: {error}", file=sys.stderr)
        return 2
    rows = compare(baseline, current, args.threshold)
    if not rows:
        print(f"compare: no benchmark with a time is in both {args.baseline} and {args.current}", file=sys.stderr)
        return 2
    text = markdown(rows, args.threshold)
    print(text)
    if args.markdown:
        try:
            with open(args.markdown, "w", encoding="utf-8") as out:
                out.write(text)
        except OSError as error:
            print(f"compare: cannot write {args.markdown}: {error}", file=sys.stderr)
            return 2
    return 1 if any(r["verdict"] == "slower" for r in rows) else 0


def run(argv=None):
    """main(), with any failure of its own exit 2: exit 1 means "slower" and nothing else."""
    try:
        return main(argv)
    except Exception:  # noqa: BLE001 - the gate's verdict must not be a crash's exit status
        traceback.print_exc()
        print("compare: internal error (above); no verdict", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(run())
