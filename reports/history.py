#!/usr/bin/env python3
"""Tracks key figures over runs, per device.

  history.py append HISTORY.jsonl RUN.json...   add one line per vendor-cache state of the
                                                runs: commit, date, device, driver, toolkit,
                                                mode, state, and every benchmark's median
                                                with its noise and every paired ratio with
                                                its interval; runs of two devices are refused,
                                                and so are files of one state that are not one
                                                run (another commit, driver, toolkit...) or
                                                that hold the same benchmark: a line is one
                                                commit's, one figure one measurement
  history.py plot HISTORY.jsonl --out DIR       trend plots of the key figures: one plot per
                                                figure and device (DIR/<device>/), one series
                                                per mode and vendor-cache state; among them
                                                CUB time / cujit time of every reduce type at
                                                each n >= 2^22 the lines hold
"""
import argparse
import json
import math
import os
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cujit_reports import bench_json, figures, joining, reduce_vs_cub  # noqa: E402

KEY_FIGURES = ["cujit/e2e_cubin/tiny", "cujit/nvrtc/tiny/ptx", "cujit/reduce_build/cold",
               "cujit/reduce_build/memory_hit", "cujit/reduce_build/disk_hit_new_process",
               "cujit/graph_chain/empty/1000", "cujit/stream_chain/empty/1000",
               "cujit/reduce_into/int32_sum/268435456", "first_result/cujit/whole_process"]
# Paired ratios (cujit / floor) tracked with their intervals.
KEY_RATIOS = ["pair/e2e_cubin/tiny", "pair/nvrtc/tiny/ptx", "pair/e2e_launchable/tiny",
              "pair/first_result/cujit/whole_process"]
# CUB time / cujit time of one reduce type at one n: reduce_vs_cub/<type>/<n>. Derived when
# plotted from the line's two medians and their noise, which every line records, so lines
# appended before these were tracked show them too and the line format is unchanged.
REDUCE_VS_CUB = "reduce_vs_cub/"


def reduce_vs_cub_names(lines):
    """reduce_vs_cub/<type>/<n> for every type and n >= 2^22 (where the 98% goal holds) that a
    line has both medians of, in type order, then by n."""
    keys = set()
    for line in lines:
        medians = line.get("medians", {})
        for name in medians:
            key = reduce_vs_cub.parse(name)
            if (key and name == reduce_vs_cub.cujit_name(*key) and key[1] >= reduce_vs_cub.LARGE_N
                    and reduce_vs_cub.cub_name(*key) in medians):
                keys.add(key)
    return [f"{REDUCE_VS_CUB}{t}/{n}" for t, n in sorted(keys, key=lambda k: (reduce_vs_cub.type_order(k[0]), k[1]))]


def _reduce_vs_cub_point(line, name):
    """(ratio, spread or None) of a reduce_vs_cub/<type>/<n> name in one line, else None."""
    type_name, _, n = name[len(REDUCE_VS_CUB):].rpartition("/")
    cujit, cub = reduce_vs_cub.cujit_name(type_name, n), reduce_vs_cub.cub_name(type_name, n)
    medians, noise = line.get("medians", {}), line.get("noise", {})
    if cujit not in medians or cub not in medians:
        return None
    return reduce_vs_cub.ratio_with_spread(medians[cujit], noise.get(cujit), medians[cub], noise.get(cub))


def _ratios(data):
    out = {}
    for name, b in data.items():
        if name.startswith("pair/"):
            p = figures.pair(b)
            if p.error is None and p.skipped is None and p.ratio is not None:
                out[name] = [p.ratio, p.low, p.high]
    return out


def one_run(group, state):
    """The Joined of one state's files; SchemaError naming every file when they are not one run
    (the line records the first one's commit and driver) or when two hold the same benchmark
    (the line holds one figure per name)."""
    where = figures.state_label(state)
    cujit = joining.join([run for run in group if not figures.is_peer(run)])
    # Peers' own records may be older and say less; the line's commit and driver are cujit's.
    if cujit.mixed:
        raise bench_json.SchemaError(
            f"the {where} files are not one run: they differ in {', '.join(label for label, _ in cujit.fields)} "
            f"({cujit.describe_runs()}); append each run on its own")
    joined = joining.join(group)
    if joined.overwritten:
        clashes = "; ".join(f"{o.name} in {o.hidden.where()} and {o.shown.where()}" for o in joined.overwritten)
        raise bench_json.SchemaError(f"{len(joined.overwritten)} benchmarks are in two {where} files, and a "
                                     f"history line holds one figure each: {clashes}")
    return joined


def entries(runs):
    """One history line per vendor-cache state of `runs`, all of one device and each of one run
    (SchemaError otherwise). Peer runs, which record no state, form the line of state None."""
    device = figures.device_of(runs)
    lines = []
    for state in figures.STATES:
        group = [run for run in runs if figures.state_of(run) == state]
        if not group:
            continue
        cujit = [run for run in group if not figures.is_peer(run)] or group
        context = cujit[0].context
        data = one_run(group, state).data
        lines.append({"commit": context.get("cujit_git_commit"), "date": context.get("date"), "device": device,
                      "driver": context.get("driver_version"), "driver_release": context.get("driver_release"),
                      "mode": context.get("cujit_mode"), "vendor_cache": state,
                      "nvrtc": context.get("nvrtc_version"), "nvjitlink": context.get("nvjitlink_version"),
                      "medians": {name: b.median for name, b in data.items() if b.median},
                      "noise": {name: f.noise for name, f in ((n, figures.figure(b)) for n, b in data.items())
                                if f.noise is not None and f.median},
                      "ratios": _ratios(data)})
    return lines


def append(history, files):
    runs = [bench_json.load(f) for f in files]
    text = "".join(json.dumps(line, sort_keys=True) + "\n" for line in entries(runs))
    # Without blocking (a FIFO with no reader fails at once) and only to a regular file.
    try:
        fd = os.open(history, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as error:
        raise bench_json.SchemaError(f"{history}: cannot be opened for appending ({error.strerror or error})") from error
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        if not stat.S_ISREG(os.fstat(out.fileno()).st_mode):
            raise bench_json.SchemaError(f"{history}: is not a regular file")
        out.write(text)


def _check_line(history, number, line):
    where = f"{history}: line {number}"
    if not isinstance(line, dict):
        raise bench_json.SchemaError(f"{where} must be an object")
    commit = line.get("commit")
    if commit is not None and not isinstance(commit, str):
        raise bench_json.SchemaError(f"{where}: commit must be a string, not {commit!r}")
    medians = line.get("medians", {})
    if not isinstance(medians, dict):
        raise bench_json.SchemaError(f"{where}: medians must be an object")
    for key in ("device", "mode", "vendor_cache"):
        if line.get(key) is not None and not isinstance(line[key], str):
            raise bench_json.SchemaError(f"{where}: {key} must be a string, not {line[key]!r}")
    for field in ("medians", "noise"):
        values = line.get(field, {})
        if not isinstance(values, dict):
            raise bench_json.SchemaError(f"{where}: {field} must be an object")
        for name, value in values.items():
            if not _finite(value):
                raise bench_json.SchemaError(f"{where}: {field}.{name} must be a finite number >= 0, not {value!r}")
    ratios = line.get("ratios", {})
    if not isinstance(ratios, dict):
        raise bench_json.SchemaError(f"{where}: ratios must be an object")
    for name, value in ratios.items():
        if (not isinstance(value, list) or len(value) != 3 or not _finite(value[0])
                or not all(v is None or _finite(v) for v in value[1:])):
            raise bench_json.SchemaError(f"{where}: ratios.{name} must be [ratio, low, high], not {value!r}")
    return line


def _finite(value):
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value >= 0


def read(history):
    """The history's lines, each checked; SchemaError naming the file and the line."""
    text = bench_json.read_text(history)
    lines = []
    for number, raw in enumerate(text.splitlines(), 1):
        if raw.strip():
            lines.append(_check_line(history, number, bench_json.parse_json(f"{history}: line {number}", raw)))
    return lines


def series(lines, name):
    """{device: {(mode, vendor-cache state): [(line index, value, error below, error above)]}}
    for a median (errors from its recorded noise, None when none), a paired ratio (its
    interval) or a reduce_vs_cub/ ratio (both sides' noise propagated): a device's points
    never join another device's."""
    out = {}
    for index, line in enumerate(lines):
        if name.startswith("pair/"):
            if name not in line.get("ratios", {}):
                continue
            ratio, low, high = line["ratios"][name]
            point = (index, ratio, None if low is None else ratio - low, None if high is None else high - ratio)
        elif name.startswith(REDUCE_VS_CUB):
            measured = _reduce_vs_cub_point(line, name)
            if measured is None:
                continue
            ratio, spread = measured
            point = (index, ratio, spread, spread)
        else:
            if name not in line.get("medians", {}):
                continue
            median, noise = line["medians"][name], line.get("noise", {}).get(name)
            spread = None if noise is None else noise * median
            point = (index, median, spread, spread)
        key = (line.get("mode") or "mode not recorded", figures.state_label(line.get("vendor_cache"))
               if line.get("vendor_cache") in figures.STATES else line.get("vendor_cache"))
        out.setdefault(line.get("device") or "device not recorded", {}).setdefault(key, []).append(point)
    return out


def _slug(text):
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def _axis(name):
    """(scale of the stored value, y label, goal line in that scale or None) of a figure."""
    if name.startswith("pair/"):
        return 1, "cujit / floor (bars: 95% interval)", None
    if name.startswith(REDUCE_VS_CUB):
        goal = reduce_vs_cub.goal(int(name.rpartition("/")[2]))
        return 100, "CUB / cujit time, % (bars: spread)", goal * 100
    return 1e3, "ms (median; bars: stddev)", None


def plot(history, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    lines = read(history)
    written = []
    for name in KEY_FIGURES + KEY_RATIOS + reduce_vs_cub_names(lines):
        scale, ylabel, goal = _axis(name)
        for device, by_key in sorted(series(lines, name).items()):
            fig, ax = plt.subplots(figsize=(7, 3.8))
            indices = sorted({p[0] for points in by_key.values() for p in points})
            bare = False
            if goal is not None:
                ax.axhline(goal, color="black", linestyle="--", label=f"goal: {goal:g}%")
            for (mode, state), points in sorted(by_key.items()):
                below = [(p[2] or 0) * scale for p in points]
                above = [(p[3] or 0) * scale for p in points]
                line = ax.errorbar([p[0] for p in points], [p[1] * scale for p in points], yerr=[below, above],
                                   marker="o", capsize=2, label=f"{mode} mode, {state}")
                missing = [p for p in points if p[2] is None]
                if missing:
                    bare = True
                    ax.plot([p[0] for p in missing], [p[1] * scale for p in missing], "x", markersize=10,
                            color=line[0].get_color())
            ax.set_xticks(indices)
            ax.set_xticklabels([(lines[i].get("commit") or "?")[:8] for i in indices], rotation=45, fontsize=7)
            ax.set_ylabel(ylabel)
            ax.set_title(f"{name}\n{device}" + ("; x: no noise recorded" if bare else ""), fontsize=9)
            ax.legend(fontsize=7)
            fig.tight_layout()
            directory = os.path.join(out_dir, _slug(device))
            os.makedirs(directory, exist_ok=True)
            path = os.path.join(directory, name.replace("/", "_") + ".png")
            fig.savefig(path, dpi=100)
            plt.close(fig)
            written.append(path)
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    add = sub.add_parser("append")
    add.add_argument("history")
    add.add_argument("files", nargs="+")
    draw = sub.add_parser("plot")
    draw.add_argument("history")
    draw.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "append":
            append(args.history, args.files)
        else:
            for path in plot(args.history, args.out):
                print(path)
    except (bench_json.SchemaError, OSError) as error:
        print(f"history: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
