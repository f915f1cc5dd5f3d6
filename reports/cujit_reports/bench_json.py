"""Loading cujit benchmark JSON (Google Benchmark's layout, context.cujit_schema == "1").

A run becomes a dict of Benchmark records keyed by a base name: the benchmark's name
without Google Benchmark's decorations (/iterations:N, /repeats:N, /manual_time, the
aggregate suffix). Times are in seconds.
"""
import json
import re
from dataclasses import dataclass, field

SCHEMA = "1"
_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_DECORATIONS = re.compile(r"/(iterations|repeats|threads):\d+|/manual_time|/real_time")


class SchemaError(ValueError):
    """The file is not cujit benchmark JSON of a schema this code reads."""


@dataclass
class Benchmark:
    name: str
    samples: list = field(default_factory=list)  # seconds per iteration, one per repetition
    counters: dict = field(default_factory=dict)  # counter -> list of values per repetition
    median: float = None
    mean: float = None
    stddev: float = None
    cv: float = None
    error: str = None

    def counter(self, key):
        values = sorted(self.counters.get(key, []))
        return values[len(values) // 2] if values else None


@dataclass
class Run:
    path: str
    context: dict
    benchmarks: dict

    @property
    def label(self):
        peer = self.context.get("peer")
        if peer:
            return f"{peer} {self.context.get('peer_version', '')}".strip()
        return "cujit " + self.context.get("cujit_version", "?")


def base_name(name):
    name = _DECORATIONS.sub("", name)
    for aggregate in ("_mean", "_median", "_stddev", "_cv"):
        if name.endswith(aggregate):
            return name[: -len(aggregate)]
    return name


_COUNTER_SKIP = {"name", "run_name", "run_type", "repetitions", "repetition_index", "threads",
                 "iterations", "real_time", "cpu_time", "time_unit", "aggregate_name",
                 "aggregate_unit", "family_index", "per_family_instance_index", "label",
                 "error_occurred", "error_message"}


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as error:
        raise SchemaError(f"{path}: cannot be read as JSON ({error})") from error
    context = doc.get("context", {}) if isinstance(doc, dict) else {}
    schema = context.get("cujit_schema")
    if schema != SCHEMA:
        raise SchemaError(f"{path}: context.cujit_schema is {schema!r}, this report reads {SCHEMA!r}")
    benchmarks = {}
    for entry in doc.get("benchmarks", []):
        name = base_name(entry.get("run_name") or entry.get("name", ""))
        record = benchmarks.setdefault(name, Benchmark(name))
        if entry.get("error_occurred"):
            record.error = entry.get("error_message", "error")
            continue
        scale = _UNITS.get(entry.get("time_unit", "ns"), 1e-9)
        seconds = entry.get("real_time", 0.0) * scale
        if entry.get("run_type") == "aggregate":
            aggregate = entry.get("aggregate_name")
            if aggregate == "cv":
                record.cv = entry.get("real_time")  # a ratio, not a time
            elif aggregate in ("mean", "median", "stddev"):
                setattr(record, aggregate, seconds)
            continue
        record.samples.append(seconds)
        for key, value in entry.items():
            if key not in _COUNTER_SKIP and isinstance(value, (int, float)):
                record.counters.setdefault(key, []).append(float(value))
    for record in benchmarks.values():
        if record.samples and record.median is None:
            ordered = sorted(record.samples)
            record.median = ordered[len(ordered) // 2]
    return Run(path, context, benchmarks)


def merge(runs):
    """One dict over several runs (later files win on a name clash)."""
    merged = {}
    for run in runs:
        merged.update(run.benchmarks)
    return merged
