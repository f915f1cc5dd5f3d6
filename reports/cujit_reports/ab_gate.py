"""The A/B regression gate: two arms timed on the same machine in interleaved rounds, and a
sequential decision with a stated confidence (docs/benchmarks.md, "The gate").

An arm is a build directory and the environment its processes get: the baseline revision's
build and the current one; or one build twice (an A/A run); or one build with the planted
slowdown (CUJIT_PLANTED_SLOWDOWN) or another NVRTC / nvJitLink library in one arm. Each
round runs every family's benchmark once per arm, each run its own process, the order
alternating (AB, BA, AB, ...) so that a drift of the machine falls on both arms alike. Per
round and metric the gate keeps one paired value, and after each round it asks the exact
Wilcoxon signed-rank interval (stats.hl_interval) of their centre:

  slower      the whole 99% interval lies above the threshold      fails
  not slower  the whole 95% interval lies below the threshold      passes
  undecided   neither, when the family's time budget or its         fails, with its
              maximum rounds are spent                              figures

Decided families stop early; a slower metric stops its family at once. Time metrics (wall
`time`, the benchmark thread's `cpu`) are judged on log(B / A) against log(1 + threshold);
`own` on (own_B - own_A) / time_A against the threshold (see gate_families.py).
"""
import json
import math
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

from . import stats

# Google Benchmark's time units, in seconds. A record without one is refused, never guessed.
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


# A family judged on the benchmark thread's CPU time must do its work on that thread, and not
# wait: the benchmark records the CPU time its other threads and reaped children spent during
# the loop (off_thread_cpu_s) and the thread's voluntary context switches (waits), both per
# iteration (bench/support/bench_main.hpp). Other threads' CPU beyond this share of the judged
# time, or waits that could cost that much at WAIT_COST_S each (a switch out and back costs
# microseconds of wall time, none of CPU), mean the judged clock misses time: the run is
# refused instead of judged.
OFF_THREAD_LIMIT = 0.02
WAIT_COST_S = 5e-6

# A vendor phase counter among a run's metrics: "phase:nvrtc_nvvm_optimizer_ms".
PHASE = "phase:"
PHASE_PREFIXES = ("nvrtc_", "nvjitlink_")


class GateInputError(Exception):
    """A run the gate cannot use: an executable that fails, JSON without the benchmark or a
    field, a time that is not a positive finite number. Never a verdict."""


@dataclass
class Arm:
    label: str  # "A" or "B"
    build: str  # the build directory holding bench/<executable>
    env: dict = field(default_factory=dict)  # added to the environment of its processes

    def describe(self):
        extra = " ".join(f"{k}={v}" for k, v in sorted(self.env.items()))
        return f"{self.label}: {self.build}" + (f" with {extra}" if extra else "")


@dataclass
class Rule:
    threshold: float = 0.05  # a slowdown beyond 5% of the time fails
    confidence: float = 0.95  # of the interval that passes a family ("not slower")
    # of the interval that fails one ("slower"): stricter, because the rule looks after every
    # round, and on the H100 host under load the 95% interval called an A/A run slower in 2
    # of 17 runs
    fail_confidence: float = 0.99
    min_rounds: int = 8  # the signed-rank interval needs 6 at 95%; 8 keeps early stops rare
    max_rounds: int = 60
    budget_s: float = 60.0  # per family: past it, an undecided family stops undecided


def measure(arm, family, timeout_s=300):
    """One process of `family` in `arm`: {metric: value} for what the family is judged on
    ("time" in seconds per iteration, "own" in seconds, "ratio" for a pair)."""
    executable = os.path.join(arm.build, "bench", family.executable)
    if not os.path.isfile(executable):
        raise GateInputError(f"{arm.label}: no benchmark executable {executable}")
    env = dict(os.environ)
    env.update(dict(family.env))
    env.update(arm.env)
    env["CUJIT_BENCH_REPETITIONS"] = str(family.repetitions)
    with tempfile.TemporaryDirectory(prefix="cujit-gate-") as tmp:
        out = os.path.join(tmp, "run.json")
        command = [executable, f"--benchmark_filter={family.benchmark}", f"--benchmark_out={out}",
                   "--benchmark_out_format=json", "--benchmark_format=console", *family.args]
        try:
            run = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 timeout=timeout_s, cwd=tmp)
        except subprocess.TimeoutExpired:
            raise GateInputError(f"{arm.label}: {family.name} ran past {timeout_s} s ({' '.join(command)})")
        log = run.stdout.decode("utf-8", "replace")
        if run.returncode != 0:
            raise GateInputError(f"{arm.label}: {family.name} exited {run.returncode}: {log[-2000:]}")
        try:
            with open(out, encoding="utf-8") as handle:
                document = json.load(handle)
        except (OSError, ValueError) as error:
            raise GateInputError(f"{arm.label}: {family.name} wrote no readable JSON ({error}): {log[-2000:]}")
    return metrics_of(document, family, arm.label)


def metrics_of(document, family, label="run"):
    """The family's metrics from one run's Google Benchmark JSON: the median over its
    repetitions of each (one benchmark, every repetition without error, with a time unit).
    A median, not a mean: a burst of load on a shared machine hits one repetition, and the
    other arm's process is spared it."""
    entries = [b for b in document.get("benchmarks", []) if b.get("run_type", "iteration") == "iteration"]
    names = {b.get("run_name", b.get("name")) for b in entries}
    if len(names) != 1 or len(entries) != family.repetitions:
        raise GateInputError(f"{label}: {family.name}: {len(entries)} runs of {len(names)} benchmarks matched "
                             f"{family.benchmark}, not {family.repetitions} of 1: {sorted(map(str, names))[:5]}")
    per_run = [_entry_metrics(entry, family, label) for entry in entries]
    # A phase a repetition did not write is left out rather than medianed over fewer runs.
    return {metric: stats.median([run[metric] for run in per_run]) for metric in per_run[0]
            if all(metric in run for run in per_run)}


def _entry_metrics(entry, family, label):
    if entry.get("error_occurred"):
        raise GateInputError(f"{label}: {family.name}: {entry.get('error_message', 'error')}")
    if entry.get("skipped") or "skip_message" in entry:
        raise GateInputError(f"{label}: {family.name} was skipped: {entry.get('skip_message', '')}")
    unit = entry.get("time_unit")
    if unit not in TIME_UNITS:
        raise GateInputError(f"{label}: {family.name}: time_unit {unit!r} is not one of {sorted(TIME_UNITS)}")
    values = {"time": _positive(entry.get("real_time"), "real_time", family, label) * TIME_UNITS[unit]}
    if "cpu" in family.metrics:
        values["cpu"] = _positive(entry.get("cpu_time"), "cpu_time", family, label) * TIME_UNITS[unit]
        _check_thread_time(entry, values["cpu"], family, label)
    if "own" in family.metrics:
        own = entry.get("own_s")
        if not _number(own):
            raise GateInputError(f"{label}: {family.name}: own_s is {own!r}, not a finite number")
        values["own"] = float(own)
    if "floor_ratio" in family.metrics:
        values["ratio"] = _positive(entry.get("ratio"), "ratio", family, label)
    # Vendor phase times (bench/support/vendor_phases.*): never judged, shown beside a verdict
    # so a slower compile or link names the phase that grew.
    for key, value in entry.items():
        if (key.startswith(PHASE_PREFIXES) and key.endswith("_ms") and isinstance(value, (int, float))
                and not isinstance(value, bool) and math.isfinite(value) and value > 0):
            values[PHASE + key] = float(value)
    return values


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _positive(value, name, family, label):
    if not _number(value) or value <= 0:
        raise GateInputError(f"{label}: {family.name}: {name} is {value!r}, not a positive finite number")
    return float(value)


def _check_thread_time(entry, cpu, family, label):
    """Refuses a repetition whose thread CPU time `cpu` (seconds per iteration) misses work
    on other threads or time spent waiting (OFF_THREAD_LIMIT)."""
    off_thread, waits = entry.get("off_thread_cpu_s"), entry.get("waits")
    for name, value in (("off_thread_cpu_s", off_thread), ("waits", waits)):
        if not _number(value):
            raise GateInputError(f"{label}: {family.name}: the counter {name} is {value!r}, not a finite number, "
                                 f"so its thread CPU time cannot be shown to hold all of its time")
    # The process's clock window holds the thread's: only rounding can make this negative.
    if off_thread < -OFF_THREAD_LIMIT * cpu or waits < 0:
        raise GateInputError(f"{label}: {family.name}: off_thread_cpu_s {off_thread!r} or waits {waits!r} is "
                             f"negative: the clocks disagree")
    if off_thread > OFF_THREAD_LIMIT * cpu:
        raise GateInputError(f"{label}: {family.name}: other threads and child processes spent "
                             f"{off_thread / cpu:.1%} of the benchmark thread's CPU time, over "
                             f"{OFF_THREAD_LIMIT:.0%}: its `cpu` metric would miss that work; judge it on `time` "
                             f"(gate_families.py)")
    if waits * WAIT_COST_S > OFF_THREAD_LIMIT * cpu:
        raise GateInputError(f"{label}: {family.name}: the benchmark thread waited {waits:.3g} times an iteration "
                             f"(voluntary context switches), which can cost more than {OFF_THREAD_LIMIT:.0%} of its "
                             f"{cpu:.3g} s of CPU time: its `cpu` metric would miss that time; judge it on `time`")


def paired_value(metric, a, b):
    """The per-round value a metric is judged on, and the value a slowdown of exactly the
    threshold would give is `limit(metric, threshold)`."""
    if metric in ("time", "cpu"):
        return math.log(b[metric] / a[metric])
    if metric == "own":
        return (b["own"] - a["own"]) / a["time"]
    if metric == "floor_ratio":
        return math.log(b["ratio"] / a["ratio"])
    raise ValueError(f"unknown metric {metric}")


def limit(metric, threshold):
    return threshold if metric == "own" else math.log1p(threshold)


def shown(metric, value):
    """A judged value as people read it: a ratio B / A for times, a share of A's time for own."""
    if value is None:
        return None
    return value if metric == "own" else math.exp(value)


@dataclass
class MetricVerdict:
    metric: str
    verdict: str  # "slower", "not slower", "undecided"
    estimate: float = None  # shown(): a ratio, or own growth as a share of A's time
    low: float = None
    high: float = None
    coverage: float = None


def judge(metric, values, rule):
    """The verdict on one metric's per-round values so far: slower when the fail_confidence
    interval lies wholly above the threshold, not slower when the confidence interval lies
    wholly below it; the interval reported is the one that decided (the pass interval while
    undecided)."""
    bound = limit(metric, rule.threshold)
    estimate = shown(metric, stats.pseudo_median(values)) if values else None
    if len(values) < rule.min_rounds:
        return MetricVerdict(metric, "undecided", estimate)
    strict = stats.hl_interval(values, rule.fail_confidence)
    if strict is not None and strict[0] > bound:
        return MetricVerdict(metric, "slower", estimate, shown(metric, strict[0]), shown(metric, strict[1]), strict[2])
    found = stats.hl_interval(values, rule.confidence)
    if found is None:
        return MetricVerdict(metric, "undecided", estimate)
    low, high, coverage = found
    verdict = "not slower" if high < bound else "undecided"
    return MetricVerdict(metric, verdict, estimate, shown(metric, low), shown(metric, high), coverage)


@dataclass
class FamilyResult:
    family: str
    verdict: str  # the worst of its metrics: slower > undecided > not slower; or "error"
    rounds: int
    seconds: float
    metrics: list
    samples: dict  # metric -> per-round judged values
    a_times: list
    b_times: list
    error: str = ""
    phases: dict = field(default_factory=dict)  # vendor phase -> median of its per-round B / A


def phase_ratios(rounds):
    """{phase: median B / A} over the rounds (pairs of one arm's metrics each) in which both
    arms wrote the phase."""
    ratios = {}
    for a, b in rounds:
        for key in a:
            if key.startswith(PHASE) and key in b:
                ratios.setdefault(key[len(PHASE):], []).append(b[key] / a[key])
    return {name: stats.median(values) for name, values in sorted(ratios.items())}


def run_family(family, arm_a, arm_b, rule, measure_fn=measure, clock=time.monotonic, progress=None):
    """Interleaved rounds of one family until every metric is decided, one is slower, or the
    budget or max_rounds is spent."""
    metrics = [m for m in family.metrics]
    samples = {m: [] for m in metrics}
    a_times, b_times = [], []
    measured_rounds = []
    start = clock()
    verdicts = [MetricVerdict(m, "undecided") for m in metrics]
    rounds = 0
    try:
        while rounds < rule.max_rounds:
            order = (arm_a, arm_b) if rounds % 2 == 0 else (arm_b, arm_a)
            measured = {arm.label: measure_fn(arm, family) for arm in order}
            a, b = measured[arm_a.label], measured[arm_b.label]
            for m in metrics:
                samples[m].append(paired_value(m, a, b))
            a_times.append(a["time"])
            b_times.append(b["time"])
            measured_rounds.append((a, b))
            rounds += 1
            verdicts = [judge(m, samples[m], rule) for m in metrics]
            if progress:
                progress(family, rounds, verdicts)
            if any(v.verdict == "slower" for v in verdicts) or all(v.verdict == "not slower" for v in verdicts):
                break
            if clock() - start > rule.budget_s:
                break
    except GateInputError as error:
        return FamilyResult(family.name, "error", rounds, clock() - start, verdicts, samples, a_times, b_times,
                            str(error))
    worst = ("slower" if any(v.verdict == "slower" for v in verdicts)
             else "undecided" if any(v.verdict == "undecided" for v in verdicts) else "not slower")
    return FamilyResult(family.name, worst, rounds, clock() - start, verdicts, samples, a_times, b_times,
                        phases=phase_ratios(measured_rounds))


def passed(results):
    return all(r.verdict == "not slower" for r in results)


def to_json(results, arm_a, arm_b, rule, extra=None):
    return {
        "schema": "cujit-ab-gate/1",
        "arms": {"A": {"build": arm_a.build, "env": arm_a.env}, "B": {"build": arm_b.build, "env": arm_b.env}},
        "rule": vars(rule),
        "passed": passed(results),
        "families": [{
            "family": r.family, "verdict": r.verdict, "rounds": r.rounds, "seconds": round(r.seconds, 3),
            "error": r.error,
            "metrics": [vars(m) for m in r.metrics],
            "samples": r.samples,
            "a_time_s": r.a_times, "b_time_s": r.b_times,
            "phases_b_over_a": r.phases,
        } for r in results],
        **(extra or {}),
    }


def _fmt(metric, value):
    if value is None:
        return "-"
    return f"{value:+.1%}" if metric == "own" else f"{value:.3f}"


def markdown(results, arm_a, arm_b, rule):
    lines = [f"A/B gate: {arm_a.describe()}; {arm_b.describe()}",
             f"threshold {rule.threshold:.0%} slower; slower when its {rule.fail_confidence:.0%} signed-rank interval "
             f"is above, not slower when its {rule.confidence:.0%} interval is below; "
             f"{rule.min_rounds}-{rule.max_rounds} rounds, {rule.budget_s:.0f} s a family", "",
             "| family | verdict | rounds | metric | B vs A | interval |", "|---|---|---|---|---|---|"]
    for r in results:
        if r.verdict == "error":
            lines.append(f"| {r.family} | error | {r.rounds} | | | {r.error.splitlines()[0][:160] if r.error else ''} |")
            continue
        for i, m in enumerate(r.metrics):
            head = f"| {r.family} | {r.verdict} | {r.rounds} |" if i == 0 else "| | | |"
            name = {"time": "time B/A", "cpu": "thread CPU B/A", "own": "own growth / A time", "floor_ratio": "ratio to floor B/A"}[m.metric]
            interval = f"[{_fmt(m.metric, m.low)}, {_fmt(m.metric, m.high)}]" if m.low is not None else "-"
            lines.append(f"{head} {name} ({m.verdict}) | {_fmt(m.metric, m.estimate)} | {interval} |")
        if r.phases:
            text = ", ".join(f"{name} {ratio:.3f}" for name, ratio in r.phases.items())
            lines.append(f"| | | | vendor phases, median B/A (not judged) | {text} | |")
    return "\n".join(lines) + "\n"
