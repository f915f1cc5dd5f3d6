#!/usr/bin/env python3
"""Regression gate: baseline vs current benchmark JSON.

Refuses (exit 2) runs that cannot be compared: a run-record field that differs or is not
recorded (device, driver release, NVRTC / nvJitLink version and library, quick / full
mode, vendor-cache state, CUDA_MODULE_LOADING, host CPU, build type). Then, per benchmark:
the ratio of the medians (current / baseline) and an exact 95% interval for the factor
between the runs (Hodges-Lehmann over log times, cujit_reports/stats.py), and a verdict:

  slower            the whole interval is above 1 + threshold            fails
  faster            the whole interval is below 1 - threshold
  same              the interval lies within [1 - threshold, 1 + threshold]
  unclear           the interval reaches past a threshold but not wholly  (passes)
  not enough data   fewer than MIN_REPETITIONS repetitions on a side     fails
  missing           in one run only                                     fails
  error             errored or skipped on a side, or a time of 0        fails

Paired entries (`pair/...`: cujit and its floor timed round by round in one run, with the
ratio cujit / floor and its 95% interval as counters) are judged on that ratio instead:
the factor between the runs is current ratio / baseline ratio, its interval the
conservative [current low / baseline high, current high / baseline low], with the same
verdicts. A pair compares cujit's overhead over the floor, which the machine's drift
between the two runs does not move.

  floor moved too   cujit/X is slower, but its pair/X (the floor, timed beside it) is not:
                    the machine or a vendor library slowed both sides   (passes)

Lent GPU hosts differ from one another; a slowdown both sides of a pair share is not
cujit's, and the pair shows it. A family without a pair is judged on its times alone.

A side may be given as several files, the parts of one run (--baseline-part, --current-part):
parts of different commits are refused unless --allow-mixed-commits, which names each part's
commit above the table and beside every row; parts that differ in anything else the run
record holds, or that both hold a benchmark, are always refused. One file merged from parts
of different commits (bench/support/merge_results.py --allow-mixed-commits) is read as those
parts, alike. A gate never judges a mix it was not told of, nor picks one of two measurements.

Prints a markdown table and the failures by name. Exit 0 when nothing fails, 1 when
something does, 2 on input it cannot use (a file that is not benchmark JSON, a missing or
mistyped field, a NaN, infinite or negative time, no benchmark in both files, runs that
cannot be compared, a side that is not one run) and on any failure of its own, which is
never a verdict.
"""
import argparse
import math
import os
import sys
import traceback
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cujit_reports import bench_json, joining  # noqa: E402
from cujit_reports.stats import median, ratio_interval  # noqa: E402
from cujit_reports.tables import fmt_time  # noqa: E402

# With 9 repetitions a side, the exact 95% interval is the 18th smallest to the 18th largest
# of the 81 pairwise ratios: one or two odd repetitions cannot decide a verdict. Below 4 a
# side no 95% interval exists at all (3 and 3: the most extreme ordering has p = 0.1).
MIN_REPETITIONS = 9
CONFIDENCE = 0.95

# What must be equal in both runs' context for their times to mean the same thing.
COMPARABLE = [
    ("device", "device"),
    ("driver release", "driver_release"),
    ("NVRTC version", "nvrtc_version"),
    ("NVRTC library", "nvrtc_library"),
    ("nvJitLink version", "nvjitlink_version"),
    ("nvJitLink library", "nvjitlink_library"),
    ("mode (quick / full)", "cujit_mode"),
    ("vendor cache (cold / vendor-cache-warm)", "vendor_cache"),
    ("CUDA_MODULE_LOADING", "cuda_module_loading"),
    ("host CPU", "host_cpu_model"),
    ("build type", "cujit_build_type"),
]
COMPARABLE_KEYS = [key for _, key in COMPARABLE]

FAILING = ("slower", "not enough data", "missing", "error")


@dataclass
class Side:
    """The baseline or the current run: one file, or the parts of one run joined."""
    name: str  # "baseline" or "current"
    joined: joining.Joined

    @property
    def files(self):
        """The side's paths, each once: the parts of a merged file are runs of one path."""
        return list(dict.fromkeys(run.path for run in self.joined.runs))

    @property
    def path(self):
        return " + ".join(self.files)

    @property
    def context(self):
        # side_problems() has refused parts that differ in a compared field.
        return self.joined.runs[0].context

    @property
    def benchmarks(self):
        return self.joined.data


def side_problems(side, allow_mixed_commits=False):
    """Lines saying why a side's files cannot stand for one run; empty when they can. Parts of
    other commits pass with allow_mixed_commits; parts that differ in anything else would leave
    the side no one value to compare, and a benchmark in two parts two figures to pick from."""
    joined = side.joined
    refused = [label for label, key in joined.fields if not (allow_mixed_commits and key in joining.COMMIT_FIELDS)]
    lines = []
    if refused:
        commits_only = all(key in joining.COMMIT_FIELDS for _, key in joined.fields)
        # One merged file of several commits is refused as its parts given one by one would be.
        files = f"{side.name} files" if len(side.files) > 1 else f"{side.name} file's parts"
        lines.append(f"the {files} are not one run: they differ in {', '.join(refused)}"
                     + ("; --allow-mixed-commits compares them, saying so" if commits_only else ""))
        lines += [f"  {joining.record_text(group[0], joined.fields)}: {', '.join(run.where() for run in group)}"
                  for group in joined.groups]
    if joined.overwritten:
        lines.append(f"{len(joined.overwritten)} benchmarks are in two {side.name} files, and the gate does not "
                     "pick one of two measurements:")
        lines += [f"  {o.name}: {o.hidden.where()} and {o.shown.where()}" for o in joined.overwritten]
    return lines


@dataclass
class Row:
    name: str
    verdict: str
    detail: str = ""
    baseline: float = None  # medians, seconds
    current: float = None
    ratio: float = None  # current / baseline medians
    low: float = None  # the interval of the factor current / baseline
    high: float = None
    noise: float = None
    repetitions: tuple = (0, 0)


def differences(baseline, current, allowed=()):
    """Lines naming each run-record field that differs between the two runs or that a run
    does not record; empty when they can be compared."""
    lines = []
    for what, key in COMPARABLE:
        if key in allowed:
            continue
        b, c = baseline.context.get(key), current.context.get(key)
        unrecorded = [run.path for run, value in ((baseline, b), (current, c)) if value is None]
        if unrecorded:
            lines.append(f"{what} (context.{key}) is not recorded in {' and '.join(unrecorded)}")
        elif b != c:
            lines.append(f"{what} (context.{key}) differs: baseline {b!r}, current {c!r}")
    return lines


def _problem(record):
    if record.error is not None:
        return f"errored: {record.error}"
    if record.skipped is not None:
        return f"skipped: {record.skipped}"
    if any(t <= 0 for t in record.samples):
        return "a repetition took 0 s: no ratio can be formed"
    return None


def judge(name, b, c, threshold):
    """The Row of one benchmark; b or c is None when that run lacks it."""
    if b is None or c is None:
        return Row(name, "missing", f"not in the {'baseline' if b is None else 'current run'}")
    problems = [f"{side} {p}" for side, p in (("baseline", _problem(b)), ("current", _problem(c))) if p]
    if problems:
        return Row(name, "error", "; ".join(problems))
    row = Row(name, "", repetitions=(len(b.samples), len(c.samples)),
              noise=max(b.cv or 0.0, c.cv or 0.0))
    if b.samples and c.samples:
        row.baseline, row.current = median(b.samples), median(c.samples)
        row.ratio = row.current / row.baseline
    if min(row.repetitions) < MIN_REPETITIONS:
        row.verdict = "not enough data"
        row.detail = f"{row.repetitions[0]} / {row.repetitions[1]} repetitions; the gate needs {MIN_REPETITIONS} a side"
        return row
    shift = ratio_interval(b.samples, c.samples, CONFIDENCE)
    row.low, row.high = shift.low, shift.high
    return _verdict(row, threshold)


PAIR_COUNTERS = ("ratio", "ratio_low", "ratio_high")


def _verdict(row, threshold):
    if row.low > 1 + threshold:
        row.verdict = "slower"
    elif row.high < 1 - threshold:
        row.verdict = "faster"
    elif row.low >= 1 - threshold and row.high <= 1 + threshold:
        row.verdict = "same"
    else:
        row.verdict = "unclear"
    return row


def judge_pair(name, b, c, threshold):
    """The Row of a paired entry: the factor between the two runs' cujit / floor ratios."""
    if b is None or c is None:
        return Row(name, "missing", f"not in the {'baseline' if b is None else 'current run'}")
    problems = [f"{side} {p}" for side, p in (("baseline", _problem(b)), ("current", _problem(c))) if p]
    for side, record in (("baseline", b), ("current", c)):
        absent = [key for key in PAIR_COUNTERS if record.counter(key) is None]
        if absent:
            problems.append(f"{side} has no {', '.join(absent)}: not a paired entry")
        elif not 0 < record.counter("ratio_low") <= record.counter("ratio") <= record.counter("ratio_high"):
            problems.append(f"{side} has an interval that does not hold its ratio")
    if problems:
        return Row(name, "error", "; ".join(problems))
    row = Row(name, "", detail="paired: cujit / floor of each run", repetitions=(1, 1))
    row.baseline, row.current = b.counter("ratio"), c.counter("ratio")
    row.ratio = row.current / row.baseline
    row.low = c.counter("ratio_low") / b.counter("ratio_high")
    row.high = c.counter("ratio_high") / b.counter("ratio_low")
    return _verdict(row, threshold)


def compare(baseline, current, threshold):
    """Rows for every benchmark in either run (dicts of bench_json.Benchmark), by name."""
    rows = [(judge_pair if name.startswith("pair/") else judge)(name, baseline.get(name), current.get(name), threshold)
            for name in sorted(set(baseline) | set(current))]
    by_name = {r.name: r for r in rows}
    for row in rows:
        pair = by_name.get("pair/" + row.name[len("cujit/"):]) if row.name.startswith("cujit/") else None
        if row.verdict == "slower" and pair is not None and pair.verdict in ("same", "unclear", "faster"):
            row.verdict = "floor moved too"
            row.detail = (f"ratio {row.ratio:.3f}, interval {_interval(row)}; {pair.name} is {pair.verdict} "
                          f"({pair.baseline:.3f}x -> {pair.current:.3f}x floor): the floor slowed as much")
    return rows


def _interval(row):
    return f"[{row.low:.3f}, {row.high:.3f}]" if row.low is not None else "-"


def _runs_line(baseline, current, allowed):
    shared = ", ".join(f"{key} {baseline.context.get(key)!r}" for key in
                       ("device", "driver_release", "cujit_mode", "vendor_cache", "host_cpu_model")
                       if key not in allowed)

    def run(label, side):
        c = side.context
        commit = ("parts of several commits (below)" if side.joined.mixed else
                  f"commit {c.get('cujit_git_commit', '?')} ({c.get('cujit_git_tree', '?')} tree)")
        return f"{label}: {commit}, host load {c.get('host_load_avg', '?')}"

    lines = [f"Runs: {shared}.", f"{run('Baseline', baseline)}; {run('current', current)}."]
    for side in (baseline, current):
        if side.joined.mixed:
            lines.append(f"**The {side.name} joins runs of different commits** (--allow-mixed-commits): "
                         f"{side.joined.describe_runs()}. Each row names the run of its figures.")
    for key in allowed:
        lines.append(f"**Compared across different {key}**: baseline {baseline.context.get(key)!r}, "
                     f"current {current.context.get(key)!r}.")
    return lines


def _origins(name, *sides):
    """' [baseline from commit 1bcd7b6, tree unknown]' for each side that joins runs; '' else."""
    notes = []
    for side in sides:
        if side is not None and side.joined.mixed and name in side.joined.origin:
            notes.append(f"{side.name} from {side.joined.label(side.joined.origin[name])}")
    return f" [{'; '.join(notes)}]" if notes else ""


def markdown(rows, threshold, baseline=None, current=None, allowed=()):
    count = {verdict: sum(r.verdict == verdict for r in rows)
             for verdict in FAILING + ("same", "unclear", "faster", "floor moved too")}
    failed = sum(count[v] for v in FAILING)
    head = (f"**{'FAIL' if failed else 'PASS'}: {count['slower']} slower, {count['missing']} missing, "
            f"{count['error']} errored, {count['not enough data']} not enough data; "
            f"{count['same']} same, {count['unclear']} unclear, {count['faster']} faster"
            + (f", {count['floor moved too']} slower with their floor" if count["floor moved too"] else "") + "**")
    rule = (f"Slower when the whole {CONFIDENCE:.0%} interval of current / baseline is above "
            f"{1 + threshold:.3g} (threshold {threshold:.0%}); the interval is Hodges-Lehmann's exact one "
            f"over log times; at least {MIN_REPETITIONS} repetitions a side. Paired entries compare "
            f"the runs' cujit / floor ratios.")
    lines = [head, "", rule, ""]
    if baseline is not None:
        lines += _runs_line(baseline, current, allowed) + [""]
    lines += ["| benchmark | baseline | current | ratio | 95% interval | noise | n | verdict |",
              "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = f"{r.ratio:.3f}" if r.ratio is not None else "-"
        noise = f"{r.noise:.1%}" if r.noise is not None else "-"
        n = f"{r.repetitions[0]}/{r.repetitions[1]}" if r.verdict not in ("missing", "error") else "-"
        paired = r.name.startswith("pair/")
        # A pair's two figures are its cujit / floor ratios, not times.
        shown = [f"{v:.3f}x floor" if paired and v is not None else fmt_time(v) for v in (r.baseline, r.current)]
        if paired and r.verdict not in ("missing", "error"):
            n = "paired"
        name = f"`{r.name}`{_origins(r.name, baseline, current)}"
        lines.append(f"| {name} | {shown[0]} | {shown[1]} | {ratio} | {_interval(r)} | "
                     f"{noise} | {n} | {r.verdict} |")
    failures = [r for r in rows if r.verdict in FAILING]
    if failures:
        lines += ["", "Failures:"]
        for r in failures:
            why = r.detail or f"ratio {r.ratio:.3f}, interval {_interval(r)}"
            lines.append(f"- `{r.name}`: {r.verdict} ({why})")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline")
    parser.add_argument("current")
    parser.add_argument("--threshold", type=float, default=0.05,
                        help="relative slowdown that fails when the whole interval is past it (default 0.05)")
    parser.add_argument("--markdown", help="also write the table here")
    parser.add_argument("--baseline-part", action="append", default=[], metavar="FILE",
                        help="another part of the baseline run (repeatable): joined with BASELINE")
    parser.add_argument("--current-part", action="append", default=[], metavar="FILE",
                        help="another part of the current run (repeatable): joined with CURRENT")
    parser.add_argument("--allow-mixed-commits", action="store_true",
                        help="join parts of different commits into a side; each part's commit is named above "
                             "the table and beside every row")
    parser.add_argument("--allow-different", action="append", default=[], metavar="FIELD",
                        choices=COMPARABLE_KEYS,
                        help="compare although this run-record field differs (an A/B of that field, not a "
                             "regression check); said in the table; repeatable")
    args = parser.parse_args(argv)
    if not math.isfinite(args.threshold) or args.threshold < 0:
        # NaN would make every comparison false: a gate that always passes.
        parser.error(f"--threshold must be a finite number >= 0, not {args.threshold}")
    try:
        baseline = Side("baseline", joining.join([bench_json.load(p) for p in [args.baseline] + args.baseline_part]))
        current = Side("current", joining.join([bench_json.load(p) for p in [args.current] + args.current_part]))
    except bench_json.SchemaError as error:
        print(f"compare: {error}", file=sys.stderr)
        return 2
    mixes = side_problems(baseline, args.allow_mixed_commits) + side_problems(current, args.allow_mixed_commits)
    if mixes:
        for line in mixes:
            # A heading names the tool; the indented lines under it name the files.
            print(line if line.startswith("  ") else f"compare: {line}", file=sys.stderr)
        return 2
    different = differences(baseline, current, args.allow_different)
    if different:
        print(f"compare: {baseline.path} and {current.path} cannot be compared:", file=sys.stderr)
        for line in different:
            print(f"  {line}", file=sys.stderr)
        return 2
    if not set(baseline.benchmarks) & set(current.benchmarks):
        print(f"compare: no benchmark is in both {baseline.path} and {current.path}", file=sys.stderr)
        return 2
    rows = compare(baseline.benchmarks, current.benchmarks, args.threshold)
    text = markdown(rows, args.threshold, baseline, current, args.allow_different)
    print(text)
    if args.markdown:
        try:
            with open(args.markdown, "w", encoding="utf-8") as out:
                out.write(text)
        except OSError as error:
            print(f"compare: cannot write {args.markdown}: {error}", file=sys.stderr)
            return 2
    return 1 if any(r.verdict in FAILING for r in rows) else 0


def run(argv=None):
    """main(), with any failure of its own exit 2: exit 1 means "failed the gate" and nothing else."""
    try:
        return main(argv)
    except Exception:  # noqa: BLE001 - the gate's verdict must not be a crash's exit status
        traceback.print_exc()
        print("compare: internal error (above); no verdict", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(run())
