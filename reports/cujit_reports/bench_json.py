"""Loading cujit benchmark JSON (Google Benchmark's layout, context.cujit_schema == "1").

A run becomes a dict of Benchmark records keyed by a base name: the benchmark's name
without Google Benchmark's decorations (/iterations:N, /repeats:N, /manual_time, the
aggregate suffix). Times are in seconds. A file merged from parts (merge_results.py) keeps
context.cujit_parts as Parts, each with its benchmarks' names, for joining.py.
"""
import json
import math
import os
import re
import stat
from dataclasses import dataclass, field

SCHEMA = "1"
# How bench/support/merge_results.py --allow-mixed-commits writes a commit or tree its parts
# differ in ("mixed: 1bcd7b6, 259fe94"); context.cujit_parts then says which part holds which.
MIXED = "mixed: "
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
    error: str = None  # SkipWithError's message: the benchmark failed
    skipped: str = None  # SkipWithMessage's (Google Benchmark >= 1.8): it did not run
    manual_time: bool = True  # every entry was timed by the benchmark itself (/manual_time)

    def counter(self, key):
        values = sorted(self.counters.get(key, []))
        return values[len(values) // 2] if values else None


@dataclass
class Part:
    """One part of a merged file, as context.cujit_parts records it (merge_results.py)."""
    family: str
    commit: str  # None when the part's record had none
    tree: str
    names: list  # base names of the part's benchmarks, in file order
    digest: str = None  # the part's source digest, when the merge recorded it


@dataclass
class Run:
    path: str
    context: dict
    benchmarks: dict
    parts: list = field(default_factory=list)  # Part, for a merged file that records them
    part: str = None  # the family, for a Run that is one part of a merged file (joining.py)

    def where(self, short=False):
        """The file ('out/bench_jit-cold.json'; its name alone when short) and, for one part of
        a merged file, which one: 'bench_jit-cold.json (part scenarios)'."""
        name = os.path.basename(self.path) if short else self.path
        return name if self.part is None else f"{name} (part {self.part})"

    @property
    def label(self):
        peer = self.context.get("peer")
        if peer:
            return f"{peer} {self.context.get('peer_version', '')}".strip()
        return f"cujit {self.context.get('cujit_version') or '?'}"


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


# Benchmark JSON larger than this is refused unread (a full GPU run is a few MB).
MAX_BYTES = 256 << 20

# Context fields shown in reports and history: text when present.
_CONTEXT_TEXT = ("cujit_version", "cujit_git_commit", "cujit_git_tree", "cujit_source_digest", "cujit_build_type",
                 "cujit_mode",
                 "device", "driver_version", "driver_release", "nvrtc_version", "nvrtc_library",
                 "nvrtc_identity", "nvjitlink_version", "nvjitlink_library", "nvjitlink_identity",
                 "cccl_version", "vendor_cache", "cuda_module_loading", "host_cpu_model", "host_load_avg",
                 "date", "peer", "peer_version", "cujit_schema", "library_build_type")


def _kind_of(mode):
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def read_text(path, limit=MAX_BYTES):
    """The text of a regular file of at most `limit` bytes: opened without blocking (a FIFO
    never hangs the reader), checked on the open descriptor, decoded as UTF-8. SchemaError
    naming the path otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise SchemaError(f"{path}: cannot be opened ({error.strerror or error})") from error
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SchemaError(f"{path}: is {_kind_of(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise SchemaError(f"{path}: is {info.st_size} bytes, more than the {limit}-byte limit")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    except OSError as error:
        raise SchemaError(f"{path}: cannot be read ({error.strerror or error})") from error
    finally:
        os.close(fd)
    if len(data) > limit:
        raise SchemaError(f"{path}: grew past the {limit}-byte limit while read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SchemaError(f"{path}: is not UTF-8 text ({error})") from error


def parse_json(path, text):
    """JSON from `text`; SchemaError naming the path for anything json cannot read (nesting
    too deep for Python's recursion included)."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError, ValueError) as error:
        raise SchemaError(f"{path}: is not JSON ({type(error).__name__}: {error})") from error


def _describe(value):
    text = json.dumps(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


class _Checker:
    """Field checks that fail naming the file and the field's JSON path."""

    def __init__(self, path):
        self.path = path

    def fail(self, where, what):
        raise SchemaError(f"{self.path}: {where} {what}")

    def wrong(self, where, wanted, value):
        self.fail(where, f"must be {wanted}, not {_describe(value)}")

    def object(self, where, value):
        if not isinstance(value, dict):
            self.wrong(where, "an object", value)
        return value

    def text(self, where, value):
        if not isinstance(value, str):
            self.wrong(where, "a string", value)
        return value

    def flag(self, where, value):
        if not isinstance(value, bool):
            self.wrong(where, "true or false", value)
        return value

    def number(self, where, value, minimum=0.0):
        """A finite number >= minimum (not a boolean, NaN or infinity)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.wrong(where, "a number", value)
        try:
            number = float(value)
        except OverflowError:
            self.wrong(where, "a finite number", value)
        if not math.isfinite(number):
            self.wrong(where, "a finite number", value)
        if number < minimum:
            self.wrong(where, f"a number >= {minimum:g}", value)
        return number


def _context(check, doc):
    context = check.object("context", doc["context"]) if "context" in doc else check.fail("context", "is missing")
    schema = context.get("cujit_schema")
    if schema != SCHEMA:
        check.fail("context.cujit_schema", f"is {schema!r}, this report reads {SCHEMA!r}")
    for key in _CONTEXT_TEXT:
        if context.get(key) is not None:
            check.text(f"context.{key}", context[key])
    return context


def _entry(check, where, entry, benchmarks):
    check.object(where, entry)
    raw_name = entry.get("run_name") or entry.get("name")
    key = "run_name" if entry.get("run_name") else "name"
    if raw_name is None:
        check.fail(f"{where}.name", "is missing")
    name = base_name(check.text(f"{where}.{key}", raw_name))
    if not name:
        check.fail(f"{where}.{key}", "must not be empty")
    record = benchmarks.setdefault(name, Benchmark(name))
    record.manual_time = record.manual_time and "/manual_time" in raw_name
    _measurement(check, where, entry, record)
    return name


def _measurement(check, where, entry, record):
    """Adds one entry's time, aggregate, counters, error or skip to its Benchmark."""
    if check.flag(f"{where}.error_occurred", entry.get("error_occurred", False)):
        record.error = check.text(f"{where}.error_message", entry.get("error_message", "error"))
        return
    if "error_message" in entry:
        # Google Benchmark >= 1.8 writes a skip as error_occurred false with the message;
        # its real_time is no measurement.
        record.skipped = check.text(f"{where}.error_message", entry["error_message"]) or "skipped"
        return
    if "real_time" not in entry:
        check.fail(f"{where}.real_time", "is missing")
    real_time = check.number(f"{where}.real_time", entry["real_time"])
    run_type = check.text(f"{where}.run_type", entry.get("run_type", "iteration"))
    if run_type not in ("iteration", "aggregate"):
        check.wrong(f"{where}.run_type", "iteration or aggregate", run_type)
    aggregate = None
    if run_type == "aggregate":
        aggregate = check.text(f"{where}.aggregate_name", entry.get("aggregate_name"))
        if aggregate == "cv":
            record.cv = real_time  # a ratio, not a time (Google Benchmark writes time_unit "")
            return
        if aggregate not in ("mean", "median", "stddev"):
            return  # an aggregate the reports do not use
    # Google Benchmark always writes the unit; a time without one cannot be read as any
    # (read as nanoseconds, a 10x slower run in ms once passed as 1000x faster).
    if "time_unit" not in entry:
        check.fail(f"{where}.time_unit", "is missing")
    unit = check.text(f"{where}.time_unit", entry["time_unit"])
    if unit not in _UNITS:
        check.wrong(f"{where}.time_unit", "one of " + ", ".join(_UNITS), unit)
    seconds = real_time * _UNITS[unit]
    if aggregate:
        setattr(record, aggregate, seconds)
        return
    record.samples.append(seconds)
    for counter, value in entry.items():
        if counter not in _COUNTER_SKIP and isinstance(value, (int, float)) and not isinstance(value, bool):
            record.counters.setdefault(counter, []).append(check.number(f"{where}.{counter}", value, -math.inf))


def is_mixed(value):
    """Whether a commit or tree value is merge_results.py's record of parts that differ in it."""
    return isinstance(value, str) and value.startswith(MIXED)


def _parts(check, context, entry_names):
    """The Parts of context.cujit_parts, each with the names of its entries: merge_results.py
    writes the parts' entries in the parts' order, `benchmarks` of them a part. [] when the
    file records no parts. A file that says its commit or tree is mixed without saying which
    part holds which, or whose counts do not cover its entries, cannot be read as its parts."""
    records = context.get("cujit_parts")
    if records is None:
        for key in ("cujit_git_commit", "cujit_git_tree", "cujit_source_digest"):
            if is_mixed(context.get(key)):
                check.fail(f"context.{key}", f"is {context[key]!r}, but context.cujit_parts is missing: which "
                           "benchmark is of which commit cannot be told")
        return []
    if not isinstance(records, list) or not records:
        check.wrong("context.cujit_parts", "a non-empty list", records)
    parts, start = [], 0
    for i, record in enumerate(records):
        where = f"context.cujit_parts[{i}]"
        check.object(where, record)
        family = check.text(f"{where}.family", record.get("family"))
        commit, tree, digest = record.get("commit"), record.get("tree"), record.get("digest")
        for key, value in (("commit", commit), ("tree", tree), ("digest", digest)):
            if value is not None:
                check.text(f"{where}.{key}", value)
        count = record.get("benchmarks")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            check.wrong(f"{where}.benchmarks", "a whole number >= 0", count)
        names = entry_names[start:start + count]
        start += count
        parts.append(Part(family, commit, tree, list(dict.fromkeys(names)), digest))
    if start != len(entry_names):
        check.fail("context.cujit_parts", f"counts {start} benchmark entries, and the file holds {len(entry_names)}")
    owner = {}
    for part in parts:
        for name in part.names:
            if owner.setdefault(name, part) is not part:
                check.fail("context.cujit_parts", f"puts entries of {name} in parts {owner[name].family} and "
                           f"{part.family}: the counts do not follow the benchmarks")
    return parts


def load(path):
    """A Run from cujit benchmark JSON. Anything a report cannot use (not a regular file,
    not JSON, a missing or mistyped field, a time that is NaN, infinite or negative, no
    benchmarks at all; context.cujit_parts that does not account for the entries) is a
    SchemaError naming the file and the field."""
    doc = parse_json(path, read_text(path))
    check = _Checker(path)
    check.object("the top level", doc)
    context = _context(check, doc)
    if "benchmarks" not in doc:
        check.fail("benchmarks", "is missing")
    entries = doc["benchmarks"]
    if not isinstance(entries, list):
        check.wrong("benchmarks", "a list", entries)
    if not entries:
        check.fail("benchmarks", "is empty: there is nothing to report")
    benchmarks = {}
    entry_names = [_entry(check, f"benchmarks[{i}]", entry, benchmarks) for i, entry in enumerate(entries)]
    for record in benchmarks.values():
        if record.samples and record.median is None:
            ordered = sorted(record.samples)
            record.median = ordered[len(ordered) // 2]
    return Run(path, context, benchmarks, _parts(check, context, entry_names))
