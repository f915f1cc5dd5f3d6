#!/usr/bin/env python3
"""The reduce's two backends against AOT CUB, from one or more bench_reduce JSON files of
one run: per type and n (sums, and the argmin over a user-defined pair), CUB time / cujit
time for the hand-written kernels
(`cujit/reduce_into/...`) and for CUB's kernels JIT-built (`cujit/reduce_into_cub/...`),
each with its spread (reduce_vs_cub.ratio_with_spread: the two medians' cvs in
quadrature), and the CUB backend's build figures (`cujit/reduce_build_cub/...`) beside the
hand-written build's. Prints markdown: docs/reduce.md quotes it as generated.

    python3 reports/reduce_backends.py RUN.json [RUN.json ...]
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cujit_reports import bench_json, figures, reduce_vs_cub  # noqa: E402

# A workload is "<type>_sum" for the scalar types, "pair_argmin" for the user-defined pair.
_JIT_CUB = re.compile(r"cujit/reduce_into_cub/(\w+)_(sum|argmin)/(\d+)$")
BUILDS = ("cujit/reduce_build/cold", "cujit/reduce_build_cub/cold", "cujit/reduce_build_cub/second_type",
          "cujit/reduce_build_cub/memory_hit", "cujit/reduce_build_cub/disk_hit_new_process")


def cell(data, name, cub):
    ours = figures.figure(data.get(name))
    if ours is None or cub is None or ours.error or cub.error or ours.skipped or cub.skipped:
        return "-"
    measured = reduce_vs_cub.ratio_with_spread(ours.median, ours.noise, cub.median, cub.noise)
    if measured is None:
        return "-"
    ratio, spread = measured
    return reduce_vs_cub.percent(ratio) + (f" ± {spread:.1%}" if spread is not None else "")


def time_text(seconds):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def tables(data):
    keys = set()
    for name in data:
        match = _JIT_CUB.match(name)
        if match:
            keys.add((match.group(1), match.group(2), int(match.group(3))))
    lines = ["| type | n | hand-written: CUB / cujit | CUB backend (JIT): CUB / cujit |", "|---|---|---|---|"]
    if not keys:
        lines = []  # a run of the builds alone
    for type_name, op, n in sorted(keys, key=lambda k: (k[1] != "sum", reduce_vs_cub.type_order(k[0]), k[2])):
        workload = f"{type_name}_{op}"
        cub = figures.figure(data.get(f"aot/cub_device_reduce/{workload}/{n}"))
        label = type_name if op == "sum" else f"{type_name} ({op})"
        lines.append(f"| {label} | {reduce_vs_cub.size_label(n)} | "
                     f"{cell(data, f'cujit/reduce_into/{workload}/{n}', cub)} | "
                     f"{cell(data, f'cujit/reduce_into_cub/{workload}/{n}', cub)} |")
    lines += ([""] if lines else []) + ["| build | median | cv | repetitions |", "|---|---|---|---|"]
    for name in BUILDS:
        f = figures.figure(data.get(name))
        if f is None or f.median is None:
            continue
        noise = f"{f.noise:.1%}" if f.noise is not None else "-"
        lines.append(f"| `{name}` | {time_text(f.median)} | {noise} | {f.samples} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    args = parser.parse_args(argv)
    data = {}
    try:
        for path in args.runs:
            run = bench_json.load(path)
            data.update(run.benchmarks)
    except bench_json.SchemaError as error:
        print(f"reduce_backends: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(tables(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
