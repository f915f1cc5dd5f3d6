"""Writes peer measurements in the JSON schema of cujit's benchmarks (Google Benchmark's
layout with context.cujit_schema), so reports put peers next to cujit."""
import json
import os
import platform
import statistics
import subprocess
import sys
import time

SCHEMA = "1"


def measure(fn, repetitions):
    """Seconds of each call of fn()."""
    times = []
    for _ in range(repetitions):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def run_child(script, *args):
    """Runs `script` in a new Python process; it prints seconds on its last line."""
    out = subprocess.run([sys.executable, script, *args], capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{script} {' '.join(args)} exited {out.returncode}: "
                           + out.stderr.strip()[-800:])
    return float(out.stdout.strip().splitlines()[-1])


def entries(name, seconds):
    """Per-repetition entries plus median, mean, stddev and cv aggregates, in ms."""
    ms = [s * 1e3 for s in seconds]
    out = [{"name": name, "run_name": name, "run_type": "iteration", "repetitions": len(ms),
            "repetition_index": i, "iterations": 1, "real_time": v, "cpu_time": v,
            "time_unit": "ms"} for i, v in enumerate(ms)]
    mean = statistics.fmean(ms)
    stddev = statistics.stdev(ms) if len(ms) > 1 else 0.0
    for agg, value in (("mean", mean), ("median", statistics.median(ms)), ("stddev", stddev),
                       ("cv", stddev / mean if mean else 0.0)):
        out.append({"name": f"{name}_{agg}", "run_name": name, "run_type": "aggregate",
                    "aggregate_name": agg, "repetitions": len(ms), "iterations": 1,
                    "real_time": value, "cpu_time": value,
                    "time_unit": "" if agg == "cv" else "ms"})
    return out


def failure(name, message):
    return [{"name": name, "run_name": name, "run_type": "iteration", "error_occurred": True,
             "error_message": message, "iterations": 0, "real_time": 0, "cpu_time": 0,
             "time_unit": "ms"}]


def write(path, peer, version, benchmarks, extra_context=None):
    """The JSON file, its context holding the run record (machine_record.py) of the build in
    CUJIT_BUILD_DIR (default build/default): device, driver release, vendor-cache state, host."""
    from machine_record import run_record  # noqa: PLC0415 - run.py imports this module too
    context = run_record(os.environ.get("CUJIT_BUILD_DIR", "build/default"))
    context.update({"cujit_schema": SCHEMA, "peer": peer, "peer_version": version,
                    "host_name": platform.node(), "python": platform.python_version(),
                    "date": time.strftime("%Y-%m-%dT%H:%M:%S")})
    context.update(extra_context or {})
    with open(path, "w", encoding="utf-8") as out:
        json.dump({"context": context, "benchmarks": benchmarks}, out, indent=1)
