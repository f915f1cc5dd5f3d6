"""Several benchmark files read as one table, with what joining them would hide kept in view.

A report's column (one vendor-cache state), a history line and a side of the gate each read
several files as one dict of benchmarks. Parts of one run join quietly: the GPU lane writes a
run as one file per executable (bench_jit's families merged by bench/support/merge_results.py),
all under one run record and each with benchmarks of its own. Two things make a join more than
one run, and neither may pass unseen: files whose run records differ in what the times depend
on (the commit and tree, the machine, its driver, the toolkit, the build), and a benchmark that
two files both hold, of which a table can show one. A Joined keeps, for every benchmark, the
run it came from, the run-record fields the files differ in and every name a later file took
over. What they mean is each tool's call: the report says so beside every figure, the history
and the gate refuse.

A merged file whose parts are not one run (merge_results.py --allow-mixed-commits: its
commit reads "mixed: 1bcd7b6, 259fe94") is joined as those parts, each with its own commit
and benchmarks, so that one such file is said, labelled and refused as its parts would be.
"""
import dataclasses
import itertools
from dataclasses import dataclass, field

from . import bench_json

# Run-record fields that make two files two runs when they differ: what was measured (commit,
# tree, build, mode) and where (the machine, its driver, the toolkit libraries, the vendor
# cache). The date and the host load differ between parts of one run and are left out.
RUN_RECORD = (
    ("commit", "cujit_git_commit"),
    ("tree", "cujit_git_tree"),
    ("source digest", "cujit_source_digest"),
    ("build type", "cujit_build_type"),
    ("mode", "cujit_mode"),
    ("device", "device"),
    ("host CPU", "host_cpu_model"),
    ("driver release", "driver_release"),
    ("CUDA version", "driver_version"),
    ("NVRTC", "nvrtc_version"),
    ("NVRTC library", "nvrtc_library"),
    ("nvJitLink", "nvjitlink_version"),
    ("nvJitLink library", "nvjitlink_library"),
    ("CCCL", "cccl_version"),
    ("CUDA_MODULE_LOADING", "cuda_module_loading"),
    ("vendor cache", "vendor_cache"),
)
# The fields a different build of the code changes, on the same machine and toolkit.
COMMIT_FIELDS = ("cujit_git_commit", "cujit_git_tree", "cujit_source_digest")
# Enough of a hash to tell commits apart in a cell; the runs' list shows the whole of it.
SHORT_COMMIT = 7


def same_value(key, a, b):
    """Whether two runs agree on one run-record field. A commit matches its own abbreviation:
    one record writes the short hash (1bcd7b6), another the full one. Unrecorded (None) matches
    only unrecorded: a file that does not say cannot be taken for the same run (a source
    digest of "unknown" counts as unrecorded). An equivalence, so grouping by one member of a
    group is grouping by all."""
    if key == "cujit_source_digest":
        # "unknown" (a run outside ci/bench.sh) says no more than an older file's silence.
        a, b = (None if v == "unknown" else v for v in (a, b))
    if key == "cujit_git_commit" and a and b:
        a, b = a.lower(), b.lower()
        return a.startswith(b) or b.startswith(a)
    return a == b


def _same_record(a, b):
    return all(same_value(key, a.context.get(key), b.context.get(key)) for _, key in RUN_RECORD)


def records(runs):
    """The runs grouped by run record, in file order: [[run, ...], ...]; one group is one run."""
    groups = []
    for run in runs:
        group = next((g for g in groups if _same_record(g[0], run)), None)
        if group is None:
            groups.append([run])
        else:
            group.append(run)
    return groups


def differing(groups):
    """(label, key) of the RUN_RECORD fields on which any two of the groups disagree."""
    heads = [group[0] for group in groups]
    return [(label, key) for label, key in RUN_RECORD
            if any(not same_value(key, a.context.get(key), b.context.get(key))
                   for a, b in itertools.combinations(heads, 2))]


def _short_commit(value):
    """A hash cut to SHORT_COMMIT; anything else ('unknown') whole. A mixed value keeps every
    hash it lists: 'mixed: 1bcd7b6, 259fe94'."""
    if bench_json.is_mixed(value):
        return bench_json.MIXED + ", ".join(map(_short_commit, value[len(bench_json.MIXED):].split(", ")))
    is_hash = bool(value) and all(c in "0123456789abcdefABCDEF" for c in value)
    return value[:SHORT_COMMIT] if is_hash else value


def _value(run, key, short):
    value = run.context.get(key)
    if value is None:
        return "not recorded"
    return _short_commit(value) if short and key == "cujit_git_commit" else value


def record_text(run, fields, short=False):
    """'commit 1bcd7b6, tree unknown': the run's values of the given (label, key) fields."""
    return ", ".join(f"{label} {_value(run, key, short)}" for label, key in fields)


@dataclass
class Overwritten:
    """A benchmark two files hold: the table shows the later file's."""
    name: str
    shown: object  # bench_json.Run: the later file
    hidden: object  # bench_json.Run: the earlier file


@dataclass
class Joined:
    runs: list
    data: dict = field(default_factory=dict)  # base name -> Benchmark, a later file's over an earlier one's
    origin: dict = field(default_factory=dict)  # base name -> the Run its Benchmark came from
    overwritten: list = field(default_factory=list)  # Overwritten, in the order the files came
    groups: list = field(default_factory=list)  # records(runs)
    fields: list = field(default_factory=list)  # differing(groups): empty for one run
    _labels: dict = field(default_factory=dict, repr=False)  # id(run) -> label(run), set by join()

    @property
    def mixed(self):
        """True when the files are more than one run."""
        return bool(self.fields)

    def label(self, run):
        """The run's values of the fields the runs differ in ('commit 1bcd7b6, tree unknown');
        '' when they are one run."""
        return self._labels.get(id(run), "")

    def from_note(self, *names):
        """' [from commit 1bcd7b6, tree unknown]': the run the present names came from, each
        named when they came from different runs; '' for one run or no name present."""
        if not self.mixed:
            return ""
        present = [name for name in names if name in self.origin]
        labels = [self.label(self.origin[name]) for name in present]
        if not labels:
            return ""
        if len(set(labels)) == 1:
            return f" [from {labels[0]}]"
        return " [" + "; ".join(f"{name} from {label}" for name, label in zip(present, labels)) + "]"

    def describe_runs(self):
        """'commit 1bcd7b6, tree unknown: a.json, b.json; commit 259fe94..., tree modified: c.json':
        whole values, each record with the paths of its files (and parts of a merged file)."""
        return "; ".join(f"{record_text(group[0], self.fields)}: {', '.join(run.where() for run in group)}"
                         for group in self.groups)


def _part_run(run, part):
    """One part of a merged file as a run of its own: the file's record with the part's commit
    and tree, and the part's benchmarks."""
    context = {key: value for key, value in run.context.items() if key not in ("cujit_parts", "cujit_families")}
    for key, value in (("cujit_git_commit", part.commit), ("cujit_git_tree", part.tree),
                       ("cujit_source_digest", part.digest)):
        if value is None:
            context.pop(key, None)
        else:
            context[key] = value
    benchmarks = {name: run.benchmarks[name] for name in part.names}
    return dataclasses.replace(run, context=context, benchmarks=benchmarks, parts=[], part=part.family)


def parts_of(run):
    """The runs one file stands for: its parts when they are not one run (their records differ,
    or the file's commit or tree reads "mixed: ..."), else the file itself. SchemaError when the
    file says mixed and its parts all record one commit and tree: it contradicts itself."""
    if not run.parts:
        return [run]
    parts = [_part_run(run, part) for part in run.parts]
    if differing(records(parts)):
        return parts
    said_mixed = [key for key in COMMIT_FIELDS if bench_json.is_mixed(run.context.get(key))]
    if said_mixed:
        raise bench_json.SchemaError(f"{run.path}: context.{said_mixed[0]} is {run.context[said_mixed[0]]!r}, "
                                     "but every part in context.cujit_parts records the same commit and tree")
    return [run]


def join(runs):
    """The Joined of `runs`, in the order given (a later file's benchmark over an earlier one's);
    a merged file of several commits stands for its parts (parts_of)."""
    joined = Joined([part for run in runs for part in parts_of(run)])
    for run in joined.runs:
        for name, benchmark in run.benchmarks.items():
            if name in joined.origin:
                joined.overwritten.append(Overwritten(name, run, joined.origin[name]))
            joined.data[name] = benchmark
            joined.origin[name] = run
    joined.groups = records(joined.runs)
    joined.fields = differing(joined.groups)
    if joined.mixed:
        short = [record_text(group[0], joined.fields, short=True) for group in joined.groups]
        # Two commits that differ only past the abbreviation keep their whole hashes.
        labels = short if len(set(short)) == len(short) else [record_text(g[0], joined.fields) for g in joined.groups]
        joined._labels = {id(run): label for group, label in zip(joined.groups, labels) for run in group}
    return joined
