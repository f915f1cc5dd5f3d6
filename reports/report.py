#!/usr/bin/env python3
"""HTML report with PNG plots from cujit benchmark JSON (and peer JSON).

Plots, each drawn when its data is there: cold vs cached vs floor per scenario (log scale,
noise bars), stream vs graph per-kernel cost vs N, reduce throughput vs n against the AOT
floor and copy bandwidth, cujit next to numba-cuda and cuda.core. A table of key figures
and cujit / raw ratios. Usage: report.py --out DIR FILE.json...
"""
import argparse
import html
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cujit_reports import bench_json  # noqa: E402

SCENARIOS = ("tiny", "external_cu", "ltoir_operator", "nrt")


def _fmt(seconds):
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _noise(b):
    return (b.stddev or 0.0) if b else 0.0


# Floors whose names do not mirror cujit's (cujit/X pairs with raw/X otherwise).
FLOOR_PREFIXES = {"cujit/reduce_into/int32_sum": "aot/cub_device_reduce/int32_sum"}


def floor_of(name, data):
    for prefix, floor in FLOOR_PREFIXES.items():
        if name.startswith(prefix):
            return data.get(floor + name[len(prefix):])
    return data.get("raw/" + name[len("cujit/"):])


# Cached figures and the cold build they save.
COLD_OF = [(re.compile(r"cujit/reduce_build/(memory_hit|disk_hit|disk_hit_new_process|pch_warm)$"),
            lambda m: "cujit/reduce_build/cold"),
           (re.compile(r"cujit/kernel_link/(\w+)/memory_hit$"), lambda m: f"cujit/e2e_cubin/{m.group(1)}"),
           (re.compile(r"cujit/kernel_build/(\w+)/disk_hit_new_process$"),
            lambda m: f"cujit/e2e_launchable/{m.group(1)}")]


def cold_of(name, data):
    for pattern, cold in COLD_OF:
        match = pattern.match(name)
        if match:
            return data.get(cold(match))
    return None


def key_figures(data):
    """Rows: cujit's median and noise, its floor and the ratio, and for cached figures the
    cold build and the ratio to it."""
    rows = []
    for name in sorted(data):
        if not name.startswith("cujit/"):
            continue
        b = data[name]
        if b.median is None:
            continue
        raw = floor_of(name, data)
        ratio = f"{b.median / raw.median:.3f}" if raw and raw.median else ""
        cold = cold_of(name, data)
        vs_cold = f"{b.median / cold.median:.3g}" if cold and cold.median else ""
        rows.append((name, _fmt(b.median), f"{b.cv:.1%}" if b.cv is not None else "-",
                     _fmt(raw.median) if raw else "-", ratio, vs_cold))
    return rows


def _save(fig, ax, title, out_dir, name, plt):
    """Titles, lays out and writes one figure; returns its path."""
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(out_dir, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_cold_vs_cached(data, out_dir, plt):
    series = [("cold (cujit)", "cujit/e2e_cubin/{}"), ("cold (raw floor)", "raw/e2e_cubin/{}"),
              ("first call, new process", "cujit/first_call_new_process/{}"),
              ("memory hit", "cujit/kernel_link/{}/memory_hit"),
              ("disk hit, new process", "cujit/kernel_build/{}/disk_hit_new_process")]
    present = [s for s in SCENARIOS if any(data.get(p.format(s)) for _, p in series)]
    if not present:
        return None
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / len(series)
    for i, (label, pattern) in enumerate(series):
        xs, ys, errs = [], [], []
        for j, scenario in enumerate(present):
            b = data.get(pattern.format(scenario))
            if b and b.median:
                xs.append(j + i * width)
                ys.append(b.median * 1e3)
                errs.append(_noise(b) * 1e3)
        if xs:
            ax.bar(xs, ys, width, yerr=errs, label=label, capsize=2)
    ax.set_yscale("log")
    ax.set_ylabel("ms (median, bars: stddev)")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(present))])
    ax.set_xticklabels(present)
    return _save(fig, ax, "Source to kernel: cold, cached, raw floor", out_dir, "cold_vs_cached.png", plt)


def _by_n(data, prefix):
    points = []
    for name, b in data.items():
        match = re.fullmatch(re.escape(prefix) + r"/(\d+)", name)
        if match and b.median:
            points.append((int(match.group(1)), b))
    return sorted(points, key=lambda p: p[0])


def _series_figure(data, series, plt):
    """(fig, ax, [(label, points by n)]) for (label, name prefix) series, or None when none
    of them has data."""
    lines = [(label, _by_n(data, prefix)) for label, prefix in series]
    if not any(points for _, points in lines):
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    return fig, ax, [(label, points) for label, points in lines if points]


def plot_launch(data, out_dir, plt):
    series = [("stream, cujit", "cujit/stream_chain/empty"), ("graph, cujit", "cujit/graph_chain/empty"),
              ("stream, raw cuLaunchKernel", "raw/stream_chain/empty"),
              ("graph, raw cuGraphLaunch", "raw/graph_chain/empty")]
    figure = _series_figure(data, series, plt)
    if figure is None:
        return None
    fig, ax, lines = figure
    for label, points in lines:
        ax.errorbar([n for n, _ in points], [b.median / n * 1e6 for n, b in points],
                    yerr=[_noise(b) / n * 1e6 for n, b in points], marker="o", label=label, capsize=2)
    ax.set_xscale("log")
    ax.set_xlabel("kernels in the chain (N)")
    ax.set_ylabel("us per kernel (launch + sync / N)")
    return _save(fig, ax, "Stream launches vs one graph launch (empty kernels)", out_dir, "launch_per_kernel.png", plt)


def plot_reduce(data, out_dir, plt):
    series = [("cujit reduce_into", "cujit/reduce_into/int32_sum"),
              ("CUB DeviceReduce (nvcc, AOT)", "aot/cub_device_reduce/int32_sum"),
              ("copy bandwidth (read + write)", "raw/copy_bandwidth/int32")]
    figure = _series_figure(data, series, plt)
    if figure is None:
        return None
    fig, ax, lines = figure
    for label, points in lines:
        factor = 2 if "copy" in label else 1  # bytes read and written
        ax.plot([n for n, _ in points], [factor * n * 4 / b.median / 1e9 for n, b in points],
                marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("int32 items (n)")
    ax.set_ylabel("GB/s")
    return _save(fig, ax, "reduce_into throughput vs n", out_dir, "reduce_throughput.png", plt)


PEER_PAIRS = [
    ("NVRTC tiny -> PTX", "cujit/nvrtc/tiny/ptx", "peer/cuda_core/nvrtc/tiny/ptx"),
    ("NVRTC tiny -> LTO-IR", "cujit/nvrtc/tiny/ltoir", "peer/cuda_core/nvrtc/tiny/ltoir"),
    ("tiny source -> cubin", "cujit/e2e_cubin/tiny", "peer/cuda_core/e2e_cubin/tiny"),
    ("first launch with external .cu, new process", "cujit/first_call_new_process/external_cu",
     "peer/numba/first_launch_external_cu_new_process"),
    ("cache hit, new process", "cujit/kernel_build/tiny/disk_hit_new_process",
     "peer/numba/cache_hit_new_process/no_link"),
]


def plot_peers(data, out_dir, plt):
    rows = [(label, data.get(ours), data.get(theirs)) for label, ours, theirs in PEER_PAIRS
            if data.get(ours) and data.get(theirs) and data[ours].median and data[theirs].median]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ys = range(len(rows))
    ax.barh([y + 0.2 for y in ys], [r[1].median * 1e3 for r in rows], 0.4, label="cujit")
    ax.barh([y - 0.2 for y in ys], [r[2].median * 1e3 for r in rows], 0.4, label="peer")
    ax.set_yticks(list(ys))
    ax.set_yticklabels([r[0] for r in rows], fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("ms (median)")
    return _save(fig, ax, "cujit next to numba-cuda and cuda.core", out_dir, "peers.png", plt)


def _run_line(run):
    c = run.context
    return (f"{os.path.basename(run.path)}: {run.label}; device {c.get('device', '?')}, "
            f"driver {c.get('driver_release', '?')} (CUDA {c.get('driver_version', '?')}), "
            f"NVRTC {c.get('nvrtc_version', '?')}, nvJitLink {c.get('nvjitlink_version', '?')}, "
            f"{c.get('cujit_mode', '?')} mode, {c.get('vendor_cache', '?')}, "
            f"CPU {c.get('host_cpu_model', '?')} (load {c.get('host_load_avg', '?')}), "
            f"commit {c.get('cujit_git_commit', '?')} ({c.get('cujit_git_tree', '?')} tree), {c.get('date', '')}")


def write_html(runs, data, plots, out_dir):
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>cujit report</title>",
             "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}"
             "td.n{text-align:right}</style></head><body><h1>cujit benchmark report</h1><h2>Runs</h2><ul>"]
    for run in runs:
        parts.append("<li>" + html.escape(_run_line(run)) + "</li>")
    parts.append("</ul><h2>Plots</h2>")
    for title, path in plots:
        if path:
            parts.append(f"<h3>{html.escape(title)}</h3><img src='{os.path.basename(path)}'>")
        else:
            parts.append(f"<h3>{html.escape(title)}</h3><p>No data for this plot in these files.</p>")
    parts.append("<h2>Key figures</h2><table><tr><th>benchmark</th><th>median</th><th>noise (cv)</th>"
                 "<th>floor</th><th>cujit / floor</th><th>cached / cold</th></tr>")
    for name, value, cv, floor, ratio, vs_cold in key_figures(data):
        parts.append(f"<tr><td>{html.escape(name)}</td><td class='n'>{value}</td><td class='n'>{cv}</td>"
                     f"<td class='n'>{floor}</td><td class='n'>{ratio}</td><td class='n'>{vs_cold}</td></tr>")
    parts.append("</table>")
    errors = [(n, b.error or b.skipped) for n, b in sorted(data.items()) if b.error or b.skipped]
    if errors:
        parts.append("<h2>Skipped or failed</h2><ul>")
        parts += [f"<li>{html.escape(n)}: {html.escape(e)}</li>" for n, e in errors]
        parts.append("</ul>")
    parts.append("</body></html>")
    path = os.path.join(out_dir, "report.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(parts))
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="benchmark or peer JSON")
    parser.add_argument("--out", required=True, help="output directory")
    args = parser.parse_args(argv)
    try:
        runs = [bench_json.load(path) for path in args.files]
    except bench_json.SchemaError as error:
        print(f"report: {error}", file=sys.stderr)
        return 2
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as error:
        print(f"report: cannot create the output directory {args.out}: {error}", file=sys.stderr)
        return 2
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    data = bench_json.merge(runs)
    plots = [("Cold vs cached vs floor", plot_cold_vs_cached(data, args.out, plt)),
             ("Stream vs graph launch", plot_launch(data, args.out, plt)),
             ("reduce_into throughput", plot_reduce(data, args.out, plt)),
             ("Peers", plot_peers(data, args.out, plt))]
    path = write_html(runs, data, plots, args.out)
    print(f"report: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
