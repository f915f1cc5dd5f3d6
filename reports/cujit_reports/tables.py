"""The report's tables: per scenario, each figure in each vendor-cache state with its noise,
cujit / floor as the paired ratio with its 95% interval, and the cached figures; the
exec-to-first-result table of the five programs; reduce_into against CUB per type, each cell
judged against its goal. Rendered as markdown (for docs to include) or HTML. Every cell
names what it is: an errored, skipped or absent benchmark is a cell that says so, never an
empty one. Where one column joins files of different runs (cujit_reports/joining.py), every
cell names the run it came from, and the benchmarks a later file took over are listed.
"""
import html
import os
import re
from dataclasses import dataclass, field

from . import figures, joining, reduce_vs_cub

JIT_SCENARIOS = ("tiny", "external_cu", "ltoir_operator", "nrt")

# Floors whose names do not mirror cujit's (cujit/X pairs with raw/X otherwise): every
# reduce_into/<type>_sum with aot/cub_device_reduce/<type>_sum.
FLOOR_PREFIXES = {"reduce_into/": "aot/cub_device_reduce/"}

# Cached figures (a hit in cujit's own cache) and the build they save.
CACHED = [(re.compile(r"reduce_build/(memory_hit|disk_hit|disk_hit_new_process)$"), lambda m: "reduce_build/cold"),
          (re.compile(r"kernel_link/(\w+)/memory_hit$"), lambda m: f"e2e_cubin/{m.group(1)}"),
          (re.compile(r"kernel_build/(\w+)/disk_hit_new_process$"), lambda m: f"e2e_launchable/{m.group(1)}")]
CACHED_LABELS = {"memory_hit": "memory hit", "disk_hit": "disk hit", "disk_hit_new_process": "disk hit, new process"}

FIRST_RESULT_PROGRAMS = ("raw_driver", "cujit", "cupy", "numba_cuda", "cuda_core")
FIRST_RESULT_PARTS = (("whole_process", "whole process"), ("context", "context"), ("build_launch", "build + launch"))
FIRST_RESULT_FLOOR = "raw_driver"

NOT_IN_RUN = "not in this run"
# After a ratio that misses its goal (and what the HTML shades).
BELOW_GOAL = "✗"


@dataclass
class Table:
    title: str
    headers: list
    rows: list = field(default_factory=list)
    notes: list = field(default_factory=list)


# ---------------------------------------------------------------------------------------
# Cells

def fmt_time(seconds):
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _problem(fig):
    if fig.error is not None:
        return fig.error if fig.error.startswith("not installed") else f"error: {fig.error}"
    return f"skipped: {fig.skipped}"


def fmt_figure(fig):
    """'38.1 ms ±1.2% (cv, n=5)', '38.1 ms ±0.8% (95% CI, 30 rounds)', an error, or absence."""
    if fig is None:
        return NOT_IN_RUN
    if fig.error is not None or fig.skipped is not None:
        return _problem(fig)
    if fig.median is None:
        return "no time recorded"
    count = f"{fig.samples} rounds" if fig.noise_kind == "95% CI" else f"n={fig.samples}"
    if fig.noise is None:
        return f"{fmt_time(fig.median)} (no noise estimate, {count})"
    return f"{fmt_time(fig.median)} ±{fig.noise:.1%} ({fig.noise_kind}, {count})"


def _interval(low, high):
    return f"[{low:.3f}, {high:.3f}]" if low is not None and high is not None else "[interval not recorded]"


def fmt_pair(p, floor_label="floor"):
    """'1.021 [0.990, 1.050], 30 rounds; floor 37.2 ms ±1.0% (95% CI, 30 rounds)'."""
    if p.error is not None or p.skipped is not None:
        return _problem(figures.Figure(error=p.error, skipped=p.skipped))
    if p.ratio is None:
        return "error: the pair entry has no ratio"
    text = f"{p.ratio:.3f} {_interval(p.low, p.high)}"
    if p.rounds is not None:
        text += f", {p.rounds} rounds"
    if p.same_output is False:
        text += "; outputs NOT checked identical"
    elif p.same_output is None:
        text += "; output check not recorded"
    floor = p.side("floor")
    if floor is not None:
        text += f"; {floor_label} {fmt_figure(floor)}"
    return text


def fmt_unpaired(cujit, floor):
    """The ratio of two medians from separate (not interleaved) benchmarks, said as such."""
    if floor is None:
        return "no floor"
    if floor.error is not None or floor.skipped is not None:
        return f"floor {_problem(floor)}"
    if cujit is None or cujit.median is None or not floor.median:
        return f"floor {fmt_figure(floor)}"
    return (f"{cujit.median / floor.median:.3f} unpaired (medians of separate benchmarks, no interval); "
            f"floor {fmt_figure(floor)}")


# ---------------------------------------------------------------------------------------
# Which row a benchmark belongs to

def floor_name(key):
    for prefix, floor in FLOOR_PREFIXES.items():
        if key.startswith(prefix):
            return floor + key[len(prefix):]
    return "raw/" + key


def _key_of_floor(name):
    for prefix, floor in FLOOR_PREFIXES.items():
        if name.startswith(floor):
            return prefix + name[len(floor):]
    return name[len("raw/"):] if name.startswith("raw/") else None


def cached_base(key):
    """(the build a cached figure saves, the cache state's label), or None for a key that is
    not a cache hit."""
    for pattern, base in CACHED:
        match = pattern.match(key)
        if match:
            return base(match), CACHED_LABELS[key.rsplit("/", 1)[1]]
    return None


def row_key(name):
    """('row', key), ('cached', key) for a cujit cache hit, ('first_result', name),
    ('peer', name) or ('other', name)."""
    prefix, _, rest = name.partition("/")
    if prefix == "first_result" or (prefix == "pair" and rest.startswith("first_result/")):
        return "first_result", name
    if prefix == "peer":
        return "peer", name
    if prefix == "cujit" and cached_base(rest):
        return "cached", rest
    if prefix in ("cujit", "pair"):
        return "row", rest
    floor_key = _key_of_floor(name)
    if floor_key:
        return "row", floor_key
    return "other", name


# Families shown in another family's table: the copy bandwidth is reduce_into's ceiling.
SHOWN_WITH = {"copy_bandwidth": "reduce_into"}


def scenario_of(key):
    parts = key.split("/")
    if len(parts) > 1 and parts[1] in JIT_SCENARIOS:
        return parts[1]
    return SHOWN_WITH.get(parts[0], parts[0])


def _natural(key):
    """Sizes in numeric order: reduce_into/int32_sum/4096 before .../16384."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in key.split("/")]


def _scenario_order(scenario):
    return (JIT_SCENARIOS.index(scenario), "") if scenario in JIT_SCENARIOS else (len(JIT_SCENARIOS), scenario)


# ---------------------------------------------------------------------------------------
# Tables

def _cujit_cell(joined, key):
    data = joined.data
    own = figures.figure(data.get("cujit/" + key))
    if own is not None:
        return fmt_figure(own) + joined.from_note("cujit/" + key)
    p = figures.pair(data.get("pair/" + key))
    if p is not None:
        return fmt_figure(p.side("cujit")) + joined.from_note("pair/" + key)
    return "- (a floor without a cujit figure)"


def _present(data, key):
    return any(name in data for name in ("cujit/" + key, "pair/" + key, floor_name(key)))


def _ratio_cell(joined, key):
    data = joined.data
    p = figures.pair(data.get("pair/" + key))
    if p is not None:
        return fmt_pair(p) + joined.from_note("pair/" + key)
    # cujit and its floor may come from different runs: the note then names each.
    return (fmt_unpaired(figures.figure(data.get("cujit/" + key)), figures.figure(data.get(floor_name(key))))
            + joined.from_note("cujit/" + key, floor_name(key)))


def _row_label(key, states, l2):
    """The key, and for the reduce / copy sizes whether their working set fits in L2."""
    size = None
    for state in states:
        for name in ("cujit/" + key, floor_name(key)):
            size = size or figures.working_set(state.data.get(name), name)
    label = f"`{key}`"
    if size is not None and l2 is not None and size <= l2:
        label += f" (working set {size / figures.MIB:.3g} MiB fits in L2: a cache hit, not HBM bandwidth)"
    return label


def _cached_cell(states, cached_keys):
    parts = []
    for cached, label in cached_keys:
        for state in states:
            name = "cujit/" + cached
            if name in state.data:
                parts.append(f"{label}, {state.label} run: {fmt_figure(figures.figure(state.data[name]))}"
                             + state.joined.from_note(name))
    return "; ".join(parts) if parts else "-"


def scenario_tables(states, device, mode, l2=None, l2_source="the L2 size is not known"):
    """One Table per scenario (JIT scenarios first, then one per other family)."""
    if l2 is not None:
        l2_note = (f"L2: {l2 / figures.MIB:.3g} MiB ({l2_source}); sizes whose working set fits are marked: "
                   "their figures can exceed HBM bandwidth.")
    else:
        l2_note = f"L2: {l2_source}; sizes whose working set fits in L2 are not marked."
    keys, cached = set(), {}
    for state in states:
        for name in state.data:
            kind, key = row_key(name)
            if kind == "row":
                keys.add(key)
            elif kind == "cached":
                base, label = cached_base(key)
                keys.add(base)
                cached.setdefault(base, set()).add((key, label))
    by_scenario = {}
    for key in keys:
        by_scenario.setdefault(scenario_of(key), []).append(key)
    tables = []
    for scenario in sorted(by_scenario, key=_scenario_order):
        scenario_keys = sorted(by_scenario[scenario], key=_natural)
        has_cached = any(key in cached for key in scenario_keys)
        # A state none of whose runs has this scenario gets no columns, and a note instead.
        shown = [s for s in states if any(_present(s.data, key) for key in scenario_keys)]
        headers = ["figure"]
        for state in shown:
            headers += [f"{state.label}: cujit median", f"{state.label}: cujit / floor [95% interval]"]
        if has_cached:
            headers.append("cached (a hit in cujit's cache), by run")
        table = Table(f"Scenario `{scenario}` ({device}, {mode} mode)", headers)
        for key in scenario_keys:
            row = [_row_label(key, states, l2)]
            for state in shown:
                if _present(state.data, key):
                    row += [_cujit_cell(state.joined, key), _ratio_cell(state.joined, key)]
                else:
                    row += [NOT_IN_RUN, NOT_IN_RUN]
            if has_cached:
                row.append(_cached_cell(states, sorted(cached.get(key, ()))))
            table.rows.append(row)
        absent = [s.label for s in states if s not in shown]
        if absent:
            table.notes.append(f"Not measured in the {' and '.join(absent)} runs.")
        if any(figures.working_set(s.data.get(n), n) for s in states for key in scenario_keys
               for n in ("cujit/" + key, floor_name(key))):
            table.notes.append(l2_note)
        tables.append(table)
    return tables


def _first_result_programs(data):
    programs = list(FIRST_RESULT_PROGRAMS)
    for name in data:
        parts = name.split("/")
        if parts[0] == "pair":
            parts = parts[1:]
        if parts[0] == "first_result" and len(parts) > 1 and parts[1] not in programs:
            programs.append(parts[1])
    return programs


def first_result_table(state, device, mode):
    """Exec to first correct result, one row per program; None when the run has none."""
    data, note = state.data, state.joined.from_note
    if not any(row_key(name)[0] == "first_result" for name in data):
        return None
    headers = ["program"] + [f"{label} median" for _, label in FIRST_RESULT_PARTS]
    headers.append(f"whole process / {FIRST_RESULT_FLOOR} [95% interval]")
    table = Table(f"Exec to first result, {state.label} ({device}, {mode} mode)", headers)
    for program in _first_result_programs(data):
        row = [program + (" (the floor)" if program == FIRST_RESULT_FLOOR else "")]
        for part, _ in FIRST_RESULT_PARTS:
            name = f"first_result/{program}/{part}"
            row.append(fmt_figure(figures.figure(data[name])) + note(name) if name in data else "missing: no entry")
        pair_name = f"pair/first_result/{program}/whole_process"
        if pair_name in data:
            row.append(fmt_pair(figures.pair(data[pair_name]), "raw_driver") + note(pair_name))
        elif program == FIRST_RESULT_FLOOR:
            row.append("1 (the floor)")
        else:
            row.append("missing: no pair entry")
        table.rows.append(row)
    table.notes.append("Timed by a parent process from exec to the first correct result, interleaved with the "
                       "other programs; context creation is reported apart from build + launch.")
    return table


def _goal_cell(cell):
    """'94.3%', '94.3% ✗' below its goal, or what stands in for the ratio."""
    if cell is None:
        return NOT_IN_RUN
    if cell.cujit is None:
        return "no cujit figure"
    if cell.cub is None:
        return "no CUB floor"
    if cell.cujit.error is not None or cell.cujit.skipped is not None:
        return _problem(cell.cujit)
    if cell.cub.error is not None or cell.cub.skipped is not None:
        return "floor " + _problem(cell.cub)
    measured = cell.ratio_and_spread
    if measured is None:
        return "no time recorded"
    text = reduce_vs_cub.percent(measured[0])
    return text if cell.meets else f"{text} {BELOW_GOAL}"


def _spread_note(measured):
    spreads = [(spread / ratio, cell) for cell, ratio, spread in measured if spread is not None]
    if not spreads:
        return "No cell has a noise estimate (one repetition)."
    widest, cell = max(spreads, key=lambda s: s[0])
    text = (f"The repetitions' spread, r·sqrt(cv_cujit² + cv_CUB²), is at most ±{widest:.1%} of a cell "
            f"({cell.type_name} at {reduce_vs_cub.size_label(cell.n)}); the plot draws it per cell.")
    if len(spreads) < len(measured):
        text += f" {len(measured) - len(spreads)} cells have no noise estimate (one repetition)."
    return text


def reduce_vs_cub_table(state, device, mode):
    """CUB time / cujit time, one row per type and a column per n, each cell marked when below
    its goal; None when the run has no reduce_into or CUB entry."""
    cells = reduce_vs_cub.cells(state.data)
    if not cells:
        return None
    types = list(dict.fromkeys(c.type_name for c in cells))
    sizes = sorted({c.n for c in cells})
    by_key = {(c.type_name, c.n): c for c in cells}
    table = Table(f"reduce_into vs AOT CUB per type: CUB time / cujit time, {state.label} ({device}, {mode} mode)",
                  ["type"] + [reduce_vs_cub.size_label(n) for n in sizes])
    for type_name in types:
        table.rows.append([type_name] + [_goal_cell(by_key.get((type_name, n)))
                                         + state.joined.from_note(reduce_vs_cub.cujit_name(type_name, n),
                                                                  reduce_vs_cub.cub_name(type_name, n))
                                         for n in sizes])
    measured = reduce_vs_cub.measured(cells)
    below = sum(1 for cell, _, _ in measured if not cell.meets)
    table.notes += [
        f"Goal: >= {reduce_vs_cub.LARGE_N_GOAL:.0%} for n >= {reduce_vs_cub.size_label(reduce_vs_cub.LARGE_N)}, "
        f">= {reduce_vs_cub.EVERY_N_GOAL:.0%} at every n; {BELOW_GOAL}: below the goal of its n, judged on the "
        f"ratio as shown. Below their goal: {below} of {len(measured)} cells.",
        "Each cell is the median GPU time per call of CUB's ahead-of-time DeviceReduce over cujit's reduce_into's "
        "(above 100%: cujit is faster), from separate benchmarks, not interleaved rounds. " + _spread_note(measured)]
    return table


def simple_table(title, joined, kind):
    """Benchmarks of one row_key kind ('peer', 'other') with their figures; None when none."""
    names = sorted(name for name in joined.data if row_key(name)[0] == kind)
    if not names:
        return None
    return Table(title, ["benchmark", "median"],
                 [[f"`{n}`", fmt_figure(figures.figure(joined.data[n])) + joined.from_note(n)] for n in names])


# ---------------------------------------------------------------------------------------
# Files that are not one run, and benchmarks two files hold

def _files(runs):
    return ", ".join(f"`{run.where(short=True)}`" for run in runs)


def join_notes(joined, what):
    """Lines saying that `what` (a column, the peers) joins files of different runs, or shows one
    of two files' figures for some benchmarks; none for the parts of one run."""
    lines = []
    if joined.mixed:
        records = "; ".join(f"{_files(group)}: {joining.record_text(group[0], joined.fields)}"
                            for group in joined.groups)
        fields = ", ".join(label for label, _ in joined.fields)
        lines.append(f"**Not one run**: {what} joins files that differ in {fields}: {records}. "
                     "Each figure names the run it came from.")
    if joined.overwritten:
        pairs = dict.fromkeys((o.shown.where(short=True), o.hidden.where(short=True)) for o in joined.overwritten)
        over = "; ".join(f"`{shown}` over `{hidden}`" for shown, hidden in pairs)
        lines.append(f"**{len(joined.overwritten)} benchmarks are in two files** of {what}: the later file's "
                     f"figures are shown ({over}); every one is listed in \"Benchmarks in two files, {what}\".")
    return lines


def joins(states, peers):
    """(Joined, what it is in the report) of every column and of the peers."""
    return [(state.joined, f"the {state.label} column") for state in states] + [(peers, "the peers")]


def join_notes_of(runs):
    """join_notes() over every column and the peers of a report over `runs`."""
    return [line for joined, what in joins(figures.by_state(runs), figures.peers_of(runs))
            for line in join_notes(joined, what)]


def overwritten_table(joined, what):
    """Every benchmark a later file took over, with both files (and their runs when they
    differ); None when no name is in two files."""
    if not joined.overwritten:
        return None

    def run_text(run):
        label = joined.label(run)
        return f"`{run.where(short=True)}`" + (f" ({label})" if label else "")

    return Table(f"Benchmarks in two files, {what}: the later file's shown",
                 ["benchmark", "shown: from", "not shown: from"],
                 [[f"`{o.name}`", run_text(o.shown), run_text(o.hidden)] for o in joined.overwritten])


# ---------------------------------------------------------------------------------------
# The whole report

def benchmark_builds(run):
    """How the timed code and the timing library were built. Google Benchmark says "debug" for
    a library built without NDEBUG, as Debian's libbenchmark is (-O2, its assertions on). A
    benchmark that times itself (/manual_time) keeps that library's build out of its times;
    one timed by Google Benchmark's own clock does not, and the line says how many."""
    c = run.context
    library = c.get("library_build_type")
    text = f"cujit {c.get('cujit_build_type', '?')} build, Google Benchmark library "
    text += library if library else "build not recorded"
    if library == "debug" and run.benchmarks:
        own_clock = sorted(name for name, b in run.benchmarks.items() if not b.manual_time)
        if own_clock:
            text += f" (timing {len(own_clock)} of {len(run.benchmarks)} benchmarks with its own clock)"
        else:
            text += " (outside every time: each benchmark times itself)"
    return text


def run_line(run):
    c = run.context
    state = figures.state_label(c.get("vendor_cache")) if c.get("vendor_cache") in figures.STATES else c.get("vendor_cache")
    if figures.without_device(c.get("device") or ""):
        state = figures.NO_DEVICE_STATE_LABEL
    return (f"`{os.path.basename(run.path)}`: {run.label}; {state}; device {c.get('device', 'not recorded')}, "
            f"{c.get('cujit_mode', '?')} mode, driver {c.get('driver_release', '?')} (CUDA {c.get('driver_version', '?')}), "
            f"NVRTC {c.get('nvrtc_version', '?')}, nvJitLink {c.get('nvjitlink_version', '?')}, "
            f"commit {c.get('cujit_git_commit', '?')} ({c.get('cujit_git_tree', '?')} tree), "
            f"{benchmark_builds(run)}, "
            f"host load {c.get('host_load_avg', '?')}, {c.get('date', '')}")


def build(runs):
    """(heading, run lines, tables) of a report over `runs` (one device)."""
    device = figures.device_label(figures.device_of(runs))
    mode = figures.modes_of(runs)
    states = figures.by_state(runs)
    l2, l2_source = l2_of(runs)
    tables = scenario_tables(states, device, mode, l2, l2_source)
    for state in states:
        for table in (reduce_vs_cub_table(state, device, mode), first_result_table(state, device, mode)):
            if table:
                tables.append(table)
        other = simple_table(f"Other benchmarks, {state.label} ({device}, {mode} mode)", state.joined, "other")
        if other:
            tables.append(other)
    peers = figures.peers_of(runs)
    peer_table = simple_table("Peers (their JSON records no vendor-cache state or device)", peers, "peer")
    if peer_table:
        tables.append(peer_table)
    tables += [table for table in (overwritten_table(j, what) for j, what in joins(states, peers)) if table]
    if states:
        heading = f"cujit benchmarks: {device}, {mode} mode, " + ", ".join(s.label for s in states)
    else:
        heading = "cujit benchmarks: no cujit run among these files"
    # Above the runs: what a reader must know before reading a figure as one run's.
    notes = [line for j, what in joins(states, peers) for line in join_notes(j, what)]
    return heading, notes + [run_line(run) for run in runs], tables


def l2_of(runs):
    """The device's L2 from the first cujit run that records it, else by the device's name."""
    cujit = [run for run in runs if not figures.is_peer(run)]
    for run in cujit:
        if run.context.get("device_l2_bytes") is not None:
            return figures.l2_bytes(run.context, run.path)
    return figures.l2_bytes(cujit[0].context, cujit[0].path) if cujit else (None, "no cujit run")


def _md_cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(heading, lines, tables):
    out = [f"## {heading}", "", "Runs:", ""] + [f"- {line}" for line in lines] + [""]
    for table in tables:
        out += [f"### {table.title}", "", "| " + " | ".join(_md_cell(h) for h in table.headers) + " |",
                "|" + "---|" * len(table.headers)]
        out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows]
        out.append("")
        for note in table.notes:
            out += [note, ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _strong(escaped):
    return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", escaped)


def html_text(text):
    """Escaped text with `code` spans and **strong** spans kept."""
    parts = text.split("`")
    return "".join(f"<code>{html.escape(p)}</code>" if i % 2 else _strong(html.escape(p)) for i, p in enumerate(parts))


def to_html(tables):
    out = []
    for table in tables:
        out.append(f"<h3>{html_text(table.title)}</h3><table><tr>"
                   + "".join(f"<th>{html_text(h)}</th>" for h in table.headers) + "</tr>")
        for row in table.rows:
            cells = []
            for cell in row:
                # A miss may be followed by the note of the run it came from.
                bad = (cell.startswith(("error", "missing", "skipped", "not installed", "floor error"))
                       or BELOW_GOAL in cell)
                cells.append(f"<td{' class=bad' if bad else ''}>{html_text(cell)}</td>")
            out.append("<tr>" + "".join(cells) + "</tr>")
        out.append("</table>" + "".join(f"<p>{html_text(n)}</p>" for n in table.notes))
    return "\n".join(out)
