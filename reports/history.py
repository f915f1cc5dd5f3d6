#!/usr/bin/env python3
"""Tracks key figures over runs.

  history.py append HISTORY.jsonl RUN.json...   add one line: commit, date, device, driver,
                                                toolkit, and the median of every benchmark
  history.py plot HISTORY.jsonl --out DIR       trend plots of the key figures
"""
import argparse
import json
import math
import os
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cujit_reports import bench_json  # noqa: E402

KEY_FIGURES = ["cujit/e2e_cubin/tiny", "cujit/nvrtc/tiny/ptx", "cujit/reduce_build/cold",
               "cujit/reduce_build/memory_hit", "cujit/reduce_build/disk_hit_new_process",
               "cujit/graph_chain/empty/1000", "cujit/stream_chain/empty/1000",
               "cujit/reduce_into/int32_sum/268435456"]


def entry(runs):
    context = runs[0].context
    return {"commit": context.get("cujit_git_commit"), "date": context.get("date"),
            "device": context.get("device"), "driver": context.get("driver_version"),
            "driver_release": context.get("driver_release"), "mode": context.get("cujit_mode"),
            "nvrtc": context.get("nvrtc_version"), "nvjitlink": context.get("nvjitlink_version"),
            "medians": {name: b.median for name, b in bench_json.merge(runs).items() if b.median}}


def append(history, files):
    runs = [bench_json.load(f) for f in files]
    line = json.dumps(entry(runs), sort_keys=True) + "\n"
    # Without blocking (a FIFO with no reader fails at once) and only to a regular file.
    try:
        fd = os.open(history, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as error:
        raise bench_json.SchemaError(f"{history}: cannot be opened for appending ({error.strerror or error})") from error
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        if not stat.S_ISREG(os.fstat(out.fileno()).st_mode):
            raise bench_json.SchemaError(f"{history}: is not a regular file")
        out.write(line)


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
    for name, value in medians.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise bench_json.SchemaError(f"{where}: medians.{name} must be a finite number >= 0, not {value!r}")
    return line


def read(history):
    """The history's lines, each checked; SchemaError naming the file and the line."""
    text = bench_json.read_text(history)
    lines = []
    for number, raw in enumerate(text.splitlines(), 1):
        if raw.strip():
            lines.append(_check_line(history, number, bench_json.parse_json(f"{history}: line {number}", raw)))
    return lines


def plot(history, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    lines = read(history)
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name in KEY_FIGURES:
        points = [(i, line["medians"][name]) for i, line in enumerate(lines) if name in line.get("medians", {})]
        if not points:
            continue
        fig, ax = plt.subplots(figsize=(7, 3.5))
        ax.plot([i for i, _ in points], [v * 1e3 for _, v in points], marker="o")
        ax.set_xticks([i for i, _ in points])
        ax.set_xticklabels([(lines[i].get("commit") or "?")[:8] for i, _ in points], rotation=45, fontsize=7)
        ax.set_ylabel("ms (median)")
        ax.set_title(name)
        fig.tight_layout()
        path = os.path.join(out_dir, name.replace("/", "_") + ".png")
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
