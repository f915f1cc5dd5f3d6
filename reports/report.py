#!/usr/bin/env python3
"""Report from cujit benchmark JSON (and peer JSON): markdown tables, HTML with PNG plots.

Tables (cujit_reports/tables.py): per scenario, each figure in each vendor-cache state
(context.vendor_cache: cold, vendor-cache-warm) with its noise, cujit / floor as the paired
ratio with its 95% interval, the cached figures; exec to first result for the five programs.
Plots, one set per vendor-cache state, each titled with the device, the mode and the state,
every point with its noise: cold vs cached vs floor per scenario, stream vs graph per-kernel
cost vs N, reduce throughput vs working set with the sizes that fit in L2 marked, reduce_into
against CUB per type with its goals, cujit next to numba-cuda and cuda.core.

Files of one state that are not one run (another commit, machine, driver or toolkit) or that
hold the same benchmark are joined, and the report says so: above the runs, beside every
figure (the run it came from) and in a table of the benchmarks a later file took over
(cujit_reports/joining.py). A file merged from parts of different commits is its parts.

Usage: report.py [--out DIR] [--markdown FILE|-] FILE.json...
"""
import argparse
import html
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cujit_reports import bench_json, figures, reduce_vs_cub, tables  # noqa: E402

SCENARIOS = tables.JIT_SCENARIOS
NO_NOISE = "hatched / x: no noise estimate (one sample)"


def _side(data, name, which="cujit"):
    """The Figure of a benchmark, else of the matching side of its pair/ entry."""
    own = figures.figure(data.get(name))
    if own is not None:
        return own
    key = name.split("/", 1)[1]
    p = figures.pair(data.get("pair/" + key))
    return p.side(which) if p is not None else None


def _usable(fig):
    return fig is not None and fig.error is None and fig.skipped is None and fig.median


def _save(fig, ax, title, caption, out_dir, name, plt, notes=()):
    """Titles (the caption names device, mode and vendor-cache state), lays out and writes one
    figure; returns its path."""
    ax.set_title(title + "\n" + "; ".join((caption,) + tuple(notes)), fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = os.path.join(out_dir, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def bar_scale(values):
    """("linear", "") for bars, whose lengths are read as proportions; ("log", why) only when
    the values span two decades or more, and then the axis label says so."""
    positive = [v for v in values if v and v > 0]
    if len(positive) >= 2 and max(positive) / min(positive) >= 100:
        return "log", f"; log scale: the values span {math.log10(max(positive) / min(positive)):.1f} decades"
    return "linear", ""


def plot_cold_vs_cached(data, out_dir, plt, caption, suffix):
    series = [("cujit, cold build", "cujit/e2e_cubin/{}", "cujit"),
              ("raw floor", "raw/e2e_cubin/{}", "floor"),
              ("first call, new process", "cujit/first_call_new_process/{}", "cujit"),
              ("memory hit (cujit cache)", "cujit/kernel_link/{}/memory_hit", "cujit"),
              ("disk hit, new process (cujit cache)", "cujit/kernel_build/{}/disk_hit_new_process", "cujit")]
    present = [s for s in SCENARIOS if any(_usable(_side(data, p.format(s), w)) for _, p, w in series)]
    if not present:
        return None
    fig, ax = plt.subplots(figsize=(9, 4.8))
    width = 0.8 / len(series)
    unmeasured = False
    heights = []
    for i, (label, pattern, which) in enumerate(series):
        xs, ys, errs = [], [], []
        for j, scenario in enumerate(present):
            f = _side(data, pattern.format(scenario), which)
            if _usable(f):
                xs.append(j + i * width)
                ys.append(f.median * 1e3)
                errs.append(f.spread * 1e3 if f.spread is not None else None)
        if xs:
            heights += ys
            bars = ax.bar(xs, ys, width, yerr=[e or 0 for e in errs], label=label, capsize=2)
            for bar, err in zip(bars, errs):
                if err is None:
                    bar.set_hatch("//")
                    unmeasured = True
    scale, note = bar_scale(heights)
    ax.set_yscale(scale)
    ax.set_ylabel(f"ms (median; bars: stddev or 95% CI{note})")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(present))])
    ax.set_xticklabels(present)
    return _save(fig, ax, "Source to kernel: cold, cached, raw floor", caption, out_dir,
                 f"cold_vs_cached-{suffix}.png", plt, (NO_NOISE,) if unmeasured else ())


def _by_n(data, prefix):
    points = []
    for name, b in data.items():
        match = re.fullmatch(re.escape(prefix) + r"/(\d+)", name)
        if match and _usable(figures.figure(b)):
            points.append((int(match.group(1)), name, b))
    return sorted(points, key=lambda p: p[0])


def _errorbar(ax, xs, ys, errs, label, marker="o"):
    """A line with error bars; points without a noise estimate drawn as x. True when any."""
    line = ax.errorbar(xs, ys, yerr=[e or 0 for e in errs], marker=marker, label=label, capsize=2)
    bare = [(x, y) for x, y, e in zip(xs, ys, errs) if e is None]
    if bare:
        ax.plot([x for x, _ in bare], [y for _, y in bare], "x", color=line[0].get_color(), markersize=10)
    return bool(bare)


def plot_launch(data, out_dir, plt, caption, suffix):
    series = [("stream, cujit", "cujit/stream_chain/empty"), ("graph, cujit", "cujit/graph_chain/empty"),
              ("stream, raw cuLaunchKernel", "raw/stream_chain/empty"),
              ("graph, raw cuGraphLaunch", "raw/graph_chain/empty")]
    lines = [(label, _by_n(data, prefix)) for label, prefix in series]
    if not any(points for _, points in lines):
        return None
    fig, ax = plt.subplots(figsize=(7, 4.8))
    unmeasured = False
    for label, points in lines:
        if points:
            figs = [(n, figures.figure(b)) for n, _, b in points]
            unmeasured |= _errorbar(ax, [n for n, _ in figs], [f.median / n * 1e6 for n, f in figs],
                                    [f.spread / n * 1e6 if f.spread is not None else None for n, f in figs], label)
    ax.set_xscale("log")
    ax.set_xlabel("kernels in the chain (N)")
    ax.set_ylabel("us per kernel (launch + sync / N; bars: stddev)")
    return _save(fig, ax, "Stream launches vs one graph launch (empty kernels)", caption, out_dir,
                 f"launch_per_kernel-{suffix}.png", plt, (NO_NOISE,) if unmeasured else ())


REDUCE_SERIES = [("cujit reduce_into", "cujit/reduce_into/int32_sum"),
                 ("CUB DeviceReduce (nvcc, AOT)", "aot/cub_device_reduce/int32_sum"),
                 ("copy bandwidth (read + write)", "raw/copy_bandwidth/int32")]


def bandwidth(b, name):
    """(working set bytes, GB/s median, GB/s error or None) of a reduce / copy benchmark: its
    per-repetition GB_per_s counter when recorded, else its bytes over its median time."""
    size = figures.working_set(b, name)
    rates = b.counters.get("GB_per_s", [])
    if rates:
        ordered = sorted(rates)
        middle = ordered[len(ordered) // 2]
        if len(rates) < 2:
            return size, middle, None
        mean = sum(rates) / len(rates)
        return size, middle, math.sqrt(sum((r - mean) ** 2 for r in rates) / (len(rates) - 1))
    f = figures.figure(b)
    spread = size / 1e9 * f.spread / f.median ** 2 if f.spread is not None else None
    return size, size / f.median / 1e9, spread


def reduce_points(data):
    """[(label, [(working set bytes, GB/s, error)])] for the series with data."""
    out = []
    for label, prefix in REDUCE_SERIES:
        points = [bandwidth(b, name) for _, name, b in _by_n(data, prefix)]
        if points:
            out.append((label, sorted(points)))
    return out


def fits_in_l2(points, l2):
    """The working sets (bytes) of the plotted sizes that fit in an L2 of `l2` bytes."""
    if l2 is None:
        return []
    return sorted({size for _, series in points for size, _, _ in series if size <= l2})


def plot_reduce(data, out_dir, plt, caption, suffix, l2, l2_source):
    """(path, working sets marked as fitting in L2) or (None, [])."""
    points = reduce_points(data)
    if not points:
        return None, []
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    unmeasured = False
    for label, series in points:
        unmeasured |= _errorbar(ax, [s / figures.MIB for s, _, _ in series], [g for _, g, _ in series],
                                [e for _, _, e in series], label)
    marked = fits_in_l2(points, l2)
    notes = [NO_NOISE] if unmeasured else []
    if l2 is not None:
        smallest = min(s for _, series in points for s, _, _ in series) / figures.MIB
        ax.axvspan(min(smallest, l2 / figures.MIB) / 2, l2 / figures.MIB, color="tab:green", alpha=0.12,
                   label="fits in L2 (figures above HBM bandwidth are cache hits)")
        notes.append(f"L2 {l2 / figures.MIB:.3g} MiB from {l2_source}")
    else:
        notes.append(f"{l2_source}: sizes that fit in L2 are not marked")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("working set, MiB (bytes the benchmark reads and writes)")
    ax.set_ylabel("GB/s (median; bars: stddev)")
    path = _save(fig, ax, "reduce_into throughput vs working set", caption, out_dir,
                 f"reduce_throughput-{suffix}.png", plt, notes)
    return path, marked


# One marker per type, so that lines of similar colour still tell apart where they cross.
TYPE_MARKERS = "os^vD<>ph*"


def plot_reduce_vs_cub(data, out_dir, plt, caption, suffix):
    """CUB time / cujit time (%) against n, a line per type, with the goals; None without data."""
    measured = reduce_vs_cub.measured(reduce_vs_cub.cells(data))
    if not measured:
        return None
    fig, ax = plt.subplots(figsize=(9, 5.4))
    unmeasured = False
    types = list(dict.fromkeys(cell.type_name for cell, _, _ in measured))
    for i, type_name in enumerate(types):
        own = [(cell.n, ratio, spread) for cell, ratio, spread in measured if cell.type_name == type_name]
        unmeasured |= _errorbar(ax, [n for n, _, _ in own], [r * 100 for _, r, _ in own],
                                [None if s is None else s * 100 for _, _, s in own], type_name,
                                TYPE_MARKERS[i % len(TYPE_MARKERS)])
    sizes = [cell.n for cell, _, _ in measured]
    left, right = min(sizes) / 1.5, max(sizes) * 1.5
    ax.hlines(reduce_vs_cub.EVERY_N_GOAL * 100, left, right, colors="grey", linestyles="--",
              label=f"goal at every n: {reduce_vs_cub.EVERY_N_GOAL:.0%}")
    large = reduce_vs_cub.size_label(reduce_vs_cub.LARGE_N)
    if max(sizes) >= reduce_vs_cub.LARGE_N:
        ax.hlines(reduce_vs_cub.LARGE_N_GOAL * 100, max(left, reduce_vs_cub.LARGE_N), right, colors="black",
                  linestyles="--", label=f"goal at n >= {large}: {reduce_vs_cub.LARGE_N_GOAL:.0%}")
    ax.set_xlim(left, right)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(set(sizes)))
    ax.set_xticklabels([reduce_vs_cub.size_label(n) for n in sorted(set(sizes))])
    ax.set_xlabel("n (items reduced)")
    ax.set_ylabel("CUB time / cujit time, % (above 100: cujit faster)")
    notes = ["medians; bars: the repetitions' spread, r·sqrt(cv_cujit² + cv_CUB²)"]
    if unmeasured:
        notes.append(NO_NOISE)
    return _save(fig, ax, "reduce_into vs AOT CUB DeviceReduce, per type", caption, out_dir,
                 f"reduce_vs_cub-{suffix}.png", plt, notes)


PEER_PAIRS = [
    ("NVRTC tiny -> PTX", "cujit/nvrtc/tiny/ptx", "peer/cuda_core/nvrtc/tiny/ptx"),
    ("NVRTC tiny -> LTO-IR", "cujit/nvrtc/tiny/ltoir", "peer/cuda_core/nvrtc/tiny/ltoir"),
    ("tiny source -> cubin", "cujit/e2e_cubin/tiny", "peer/cuda_core/e2e_cubin/tiny"),
    ("first launch with external .cu, new process", "cujit/first_call_new_process/external_cu",
     "peer/numba/first_launch_external_cu_new_process"),
    ("cache hit, new process", "cujit/kernel_build/tiny/disk_hit_new_process",
     "peer/numba/cache_hit_new_process/no_link"),
]


def plot_peers(data, peers, out_dir, plt, caption, suffix):
    rows = [(label, _side(data, ours), figures.figure(peers.get(theirs))) for label, ours, theirs in PEER_PAIRS]
    rows = [r for r in rows if _usable(r[1]) and _usable(r[2])]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.8))
    ys = range(len(rows))
    unmeasured = False
    for offset, index, label in ((0.2, 1, "cujit"), (-0.2, 2, "peer (vendor cache not recorded)")):
        errs = [r[index].spread for r in rows]
        bars = ax.barh([y + offset for y in ys], [r[index].median * 1e3 for r in rows], 0.4,
                       xerr=[(e or 0) * 1e3 for e in errs], label=label, capsize=2)
        for bar, err in zip(bars, errs):
            if err is None:
                bar.set_hatch("//")
                unmeasured = True
    ax.set_yticks(list(ys))
    ax.set_yticklabels([r[0] for r in rows], fontsize=8)
    scale, note = bar_scale([r[index].median * 1e3 for r in rows for index in (1, 2)])
    ax.set_xscale(scale)
    ax.set_xlabel(f"ms (median; bars: stddev or 95% CI{note})")
    return _save(fig, ax, "cujit next to numba-cuda and cuda.core", caption, out_dir, f"peers-{suffix}.png",
                 plt, (NO_NOISE,) if unmeasured else ())


def plots(runs, out_dir, plt):
    """[(title, path or None)], one set per vendor-cache state, and the L2 marking per state."""
    device, mode = figures.device_label(figures.device_of(runs)), figures.modes_of(runs)
    l2, l2_source = tables.l2_of(runs)
    peers = figures.peers_of(runs).data
    drawn, marked = [], {}
    for state in figures.by_state(runs):
        caption = f"{device}, {mode} mode, {state.label}"
        if state.joined.mixed:
            # A line of its own, where a long caption would push it out of the figure.
            caption += "\nNOT ONE RUN: files of different " + ", ".join(label for label, _ in state.joined.fields)
        suffix = state.state or "unrecorded"
        reduce_path, marked[state.state] = plot_reduce(state.data, out_dir, plt, caption, suffix, l2, l2_source)
        drawn += [(f"Cold vs cached vs floor: {caption}", plot_cold_vs_cached(state.data, out_dir, plt, caption, suffix)),
                  (f"Stream vs graph launch: {caption}", plot_launch(state.data, out_dir, plt, caption, suffix)),
                  (f"reduce_into throughput: {caption}", reduce_path),
                  (f"reduce_into vs CUB per type: {caption}",
                   plot_reduce_vs_cub(state.data, out_dir, plt, caption, suffix)),
                  (f"Peers: {caption}", plot_peers(state.data, peers, out_dir, plt, caption, suffix))]
    return drawn, marked


# What run fills each plot, for a report whose files have no data for it (a CPU-only run).
FILLED_BY = (
    ("Cold vs cached vs floor", "bench_jit's GPU families: a GPU run (cujit bench --full, ci/bench.sh)"),
    ("Stream vs graph launch", "bench_launch: a GPU run (cujit bench --full, ci/bench.sh)"),
    ("reduce_into throughput", "bench_reduce's throughput family: a GPU run (cujit bench --full, ci/bench.sh)"),
    ("reduce_into vs CUB per type", "bench_reduce with the AOT CUB floor: a GPU run (cujit bench --full, ci/bench.sh)"),
    ("Peers", "the peers' JSON (numba-cuda, cuda.core), which ci/bench.sh writes on a GPU machine"),
)


def filled_by(title):
    return next((what for prefix, what in FILLED_BY if title.startswith(prefix)), "another benchmark run")


def write_html(runs, report, drawn, out_dir):
    heading, lines, report_tables = report
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>cujit report</title>",
             "<style>body{font-family:sans-serif;max-width:1400px;margin:2em auto}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}"
             "td.bad{background:#fdd}</style></head><body>",
             f"<h1>{html.escape(heading)}</h1><h2>Runs</h2><ul>"]
    parts += ["<li>" + tables.html_text(line) + "</li>" for line in lines]
    parts.append("</ul><h2>Figures</h2>")
    parts.append(tables.to_html(report_tables))
    parts.append("<h2>Plots</h2>")
    if not drawn:
        parts.append("<p>No data for a plot in these files: none of them is a cujit benchmark run.</p>")
    for title, path in drawn:
        if path:
            parts.append(f"<h3>{html.escape(title)}</h3><img src='{os.path.basename(path)}'>")
        else:
            parts.append(f"<h3>{html.escape(title)}</h3><p>No data for this plot in these files. "
                         f"It needs {html.escape(filled_by(title))}.</p>")
    errors = [(run.path, n, b.error or b.skipped) for run in runs for n, b in sorted(run.benchmarks.items())
              if b.error or b.skipped]
    if errors:
        parts.append("<h2>Skipped or failed</h2><ul>")
        parts += [f"<li>{html.escape(os.path.basename(p))}: {html.escape(n)}: {html.escape(e)}</li>"
                  for p, n, e in errors]
        parts.append("</ul>")
    parts.append("</body></html>")
    path = os.path.join(out_dir, "report.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(parts))
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="benchmark, first-result or peer JSON")
    parser.add_argument("--out", help="output directory: report.html, report.md and the plots")
    parser.add_argument("--markdown", metavar="FILE", help="write the markdown tables here ('-': standard output); "
                        "needs no matplotlib")
    args = parser.parse_args(argv)
    if not args.out and not args.markdown:
        parser.error("give --out DIR, --markdown FILE, or both")
    try:
        runs = [bench_json.load(path) for path in args.files]
        report = tables.build(runs)
    except bench_json.SchemaError as error:
        print(f"report: {error}", file=sys.stderr)
        return 2
    # Said where the command is run too: a report written to a directory may go unread.
    for note in tables.join_notes_of(runs):
        print("report: " + note.replace("**", "").replace("`", ""), file=sys.stderr)
    text = tables.to_markdown(*report)
    if args.markdown == "-":
        sys.stdout.write(text)
    elif args.markdown and not _write(args.markdown, text):
        return 2
    if not args.out:
        return 0
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as error:
        print(f"report: cannot create the output directory {args.out}: {error}", file=sys.stderr)
        return 2
    if not _write(os.path.join(args.out, "report.md"), text):
        return 2
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    drawn, _ = plots(runs, args.out, plt)
    path = write_html(runs, report, drawn, args.out)
    print(f"report: {path}")
    return 0


def _write(path, text):
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as error:
        print(f"report: cannot write {path}: {error}", file=sys.stderr)
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
