#!/usr/bin/env python3
"""The A/B regression gate (docs/benchmarks.md, "The gate").

  ab_gate.py --a BUILD_A --b BUILD_B [--a-env K=V ...] [--b-env K=V ...] [--families LIST]
             [--threshold 0.05] [--budget S] [--max-rounds N] [--repeat N] [--out DIR]

Times each family in interleaved rounds of both arms on this machine and decides, family by
family, "slower" (fails), "not slower" (passes) or "undecided" (fails, with its figures).
The same build on both sides is an A/A run; `--b-env CUJIT_PLANTED_SLOWDOWN=0.10` plants a
10% slowdown in B; `--b-env CUJIT_NVRTC_LIBRARY=/path/libnvrtc.so.13` compares two NVRTC
libraries. `--repeat N` runs the whole gate N times and counts its verdicts: how the gate's
power (planted slowdown) and false-alarm rate (A/A) are measured.

Exit 0 when every family is "not slower" (in every repeat), 1 when one is slower or
undecided, 2 when a run cannot be used (an executable that fails, JSON without the
benchmark or its time unit) or on bad arguments: never a verdict.
"""
import argparse
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cujit_reports import ab_gate, gate_families  # noqa: E402


def environment_pairs(words, flag):
    pairs = {}
    for word in words or []:
        name, sep, value = word.partition("=")
        if not sep or not name:
            raise SystemExit(f"ab_gate: {flag} '{word}' is not NAME=VALUE")
        pairs[name] = value
    return pairs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--a", required=True, help="arm A's build directory (the baseline)")
    parser.add_argument("--b", required=True, help="arm B's build directory (the change)")
    parser.add_argument("--a-env", action="append", metavar="NAME=VALUE")
    parser.add_argument("--b-env", action="append", metavar="NAME=VALUE")
    parser.add_argument("--families", default="cpu", help="names or groups: cpu, gpu, all, ci (default cpu)")
    parser.add_argument("--threshold", type=float, default=0.05)
    parser.add_argument("--budget", type=float, default=60.0, help="seconds a family may take before it is undecided")
    parser.add_argument("--min-rounds", type=int, default=8)
    parser.add_argument("--max-rounds", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=1, help="run the whole gate this many times and count")
    parser.add_argument("--out", help="directory for gate.json and gate.md")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)

    if not 0 < args.threshold < 1:
        parser.error("--threshold must be in (0, 1)")
    if args.min_rounds < 6 or args.max_rounds < args.min_rounds or args.repeat < 1 or args.budget <= 0:
        parser.error("need 6 <= --min-rounds <= --max-rounds, --repeat >= 1 and --budget > 0")
    try:
        families = gate_families.select(args.families)
    except ValueError as error:
        parser.error(str(error))
    arm_a = ab_gate.Arm("A", os.path.abspath(args.a), environment_pairs(args.a_env, "--a-env"))
    arm_b = ab_gate.Arm("B", os.path.abspath(args.b), environment_pairs(args.b_env, "--b-env"))
    rule = ab_gate.Rule(threshold=args.threshold, min_rounds=args.min_rounds, max_rounds=args.max_rounds,
                        budget_s=args.budget)

    def progress(family, rounds, verdicts):
        if args.quiet:
            return
        shown = ", ".join(f"{v.metric} {ab_gate._fmt(v.metric, v.estimate)} {v.verdict}" for v in verdicts)
        print(f"ab_gate: {family.name} round {rounds}: {shown}", file=sys.stderr, flush=True)

    runs = []
    started = time.monotonic()

    def tally_of(done):
        tally = {}
        for results in done:
            for r in results:
                tally.setdefault(r.family, {}).setdefault(r.verdict, 0)
                tally[r.family][r.verdict] += 1
        return tally

    def write(done):
        # After every run: a gate stopped by a time limit still leaves what it finished.
        if not args.out:
            return
        os.makedirs(args.out, exist_ok=True)
        document = ab_gate.to_json(done[-1], arm_a, arm_b, rule, {
            "host": platform.node(), "seconds": round(time.monotonic() - started, 1),
            "runs": len(done), "runs_failed": sum(1 for results in done if not ab_gate.passed(results)),
            "verdicts": tally_of(done),
            "all_runs": [[{"family": r.family, "verdict": r.verdict, "rounds": r.rounds, "seconds": round(r.seconds, 2),
                           "metrics": [vars(m) for m in r.metrics]} for r in results] for results in done],
        })
        with open(os.path.join(args.out, "gate.json"), "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=1)
        with open(os.path.join(args.out, "gate.md"), "w", encoding="utf-8") as handle:
            handle.write(ab_gate.markdown(done[-1], arm_a, arm_b, rule))

    for repeat in range(args.repeat):
        results = [ab_gate.run_family(f, arm_a, arm_b, rule, progress=progress) for f in families]
        runs.append(results)
        write(runs)
        errors = [r for r in results if r.verdict == "error"]
        print(f"ab_gate: run {repeat + 1}/{args.repeat}: " +
              ", ".join(f"{r.family} {r.verdict} ({r.rounds} rounds)" for r in results), flush=True)
        if errors:
            for r in errors:
                print(f"ab_gate: {r.family}: {r.error}", file=sys.stderr)
            break

    print(ab_gate.markdown(runs[-1], arm_a, arm_b, rule))
    gate_fails = sum(1 for results in runs if not ab_gate.passed(results))
    if args.repeat > 1:
        print(f"ab_gate: {len(runs)} runs, {gate_fails} failed; per family: " +
              "; ".join(f"{name} {counts}" for name, counts in tally_of(runs).items()))
    if any(r.verdict == "error" for results in runs for r in results):
        return 2
    return 0 if gate_fails == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
