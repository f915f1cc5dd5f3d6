#!/usr/bin/env python3
"""Which process state inflates the raw NVRTC floor of the tiny kernel?

Runs, one new process each, with CUDA_CACHE_DISABLE=1 and then with it unset:
  probe/*        probe_nvrtc_floor (NVRTC alone; bench/probes/nvrtc_floor.cpp) bare, with
                 idle or busy background threads, with libcuda loaded and cuInit(0) called,
                 with device 0's primary context current, with the old bench_jit floor's
                 options, and its first compile in each of several new processes;
  bench_jit/*    bench_jit's cujit/nvrtc/tiny/ptx and pair/nvrtc/tiny/ptx (full mode), with
                 the device visible and with CUDA_VISIBLE_DEVICES= (none visible), its
                 threads and mapped CUDA libraries sampled while it runs;
  cuda_core/*    cuda.core's Program.compile of the same source with the same options,
                 without and with a current context (when python3 has cuda.core).
Every probe state compiles what bench_jit's pair floor compiles: the tiny scenario's source
under its name, -arch=compute_90 -rdc=true and cujit's two in-memory NRT headers.

Prints a table (state, median ms with the 95% interval of the median, ratio to the bare
probe in the same cache state, and whether the intervals are apart) and writes every
child's output and a summary under OUT.

Usage (from the repository root):
  python3 bench/probes/nvrtc_floor.py --build build/gpu --out OUT [--runs 30]
Exit 0 when the bare probe ran in both cache states, 1 otherwise, 2 for a wrong command line.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE_NAME = "fixtures/scale_kernel.cu"  # the name bench_jit gives the program
SOURCE = os.path.join(REPO, "scenarios", SOURCE_NAME)
DEVICE_DIR = os.path.join(REPO, "core", "device")
HEADERS = [  # cujit::nrt::headers(): the embedded copies of these files, under these names
    ("cujit/nrt.cuh", os.path.join(DEVICE_DIR, "cujit", "nrt.cuh")),
    ("cujit/nrt_functions.def", os.path.join(DEVICE_DIR, "cujit", "nrt_functions.def")),
]
# Google Benchmark matches the whole name, which for these ends in /iterations:... or
# /manual_time, so the patterns end at a slash rather than at $.
BENCH_FILTER = "^pair/nvrtc/tiny/ptx/|^cujit/nvrtc/tiny/ptx/"
DRIFT = 0.05  # see summarise()


# ---- statistics ---------------------------------------------------------------------------

def median(values):
    ordered = sorted(values)
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def median_interval(values):
    """Sign-test (exact binomial) 95% interval of the median; the whole range below 6 values."""
    ordered = sorted(values)
    n = len(ordered)
    cut, cumulative = 0, 0.0
    for k in range(n):
        cumulative += math.comb(n, k) / 2 ** n
        if cumulative > 0.025:
            break
        cut = k + 1
    if cut == 0:
        return ordered[0], ordered[-1]
    return ordered[cut - 1], ordered[n - cut]


# ---- children -----------------------------------------------------------------------------

def environment(cache_disabled, **overrides):
    env = dict(os.environ)
    if cache_disabled:
        env["CUDA_CACHE_DISABLE"] = "1"
    else:
        env.pop("CUDA_CACHE_DISABLE", None)
    env.update(overrides)
    return env


def run(words, env, log_path, timeout, sample=False):
    """Runs words (no shell); returns (exit status or None, stdout, samples of the child)."""
    samples = {"max_threads": 0, "cuda_libraries": set()}
    started = time.monotonic()
    try:
        child = subprocess.Popen(words, env=env, cwd=REPO, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
    except OSError as error:
        return None, "", samples, f"cannot run {words[0]}: {error}"
    stopper = threading.Event()
    sampler = None
    if sample:
        sampler = threading.Thread(target=sample_process, args=(child.pid, samples, stopper))
        sampler.start()
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        err += f"\n[killed after {timeout} s]"
    stopper.set()
    if sampler:
        sampler.join()
    with open(log_path, "w", encoding="utf-8") as log:
        log.write(f"$ {' '.join(words)}\n[{time.monotonic() - started:.2f} s, exit {child.returncode}]\n")
        log.write(f"--- stdout\n{out}\n--- stderr\n{err}\n")
    return child.returncode, out, samples, err.strip()[-400:]


def sample_process(pid, samples, stopper):
    """Threads and CUDA libraries of a running child, every 50 ms (/proc/PID)."""
    stems = ("libcuda.so", "libcupti.so", "libnvrtc.so", "libnvrtc-builtins.so", "libnvJitLink.so")
    while not stopper.wait(0.05):
        try:
            samples["max_threads"] = max(samples["max_threads"], len(os.listdir(f"/proc/{pid}/task")))
            with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as maps:
                for line in maps:
                    name = line.rstrip().rsplit("/", 1)[-1]
                    if "/" in line and name.startswith(stems):
                        samples["cuda_libraries"].add(name)
        except OSError:
            return


def probe_words(probe, runs, *extra, headers=True, name=SOURCE_NAME):
    words = [probe, SOURCE, "--name", name]
    if not runs:
        words.append("--first-only")
    else:
        words += ["--runs", str(runs)]
    if headers:
        for include_name, path in HEADERS:
            words += ["--header", f"{include_name}={path}"]
    return words + list(extra)


def probe_state(label, words, env, out_dir, timeout=120):
    status, out, _, err = run(words, env, os.path.join(out_dir, label.replace("/", "_") + ".log"), timeout)
    try:
        line = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        line = {}
    if status != 0 or "per_run_ms" not in line:
        return {"state": label, "error": line.get("error") or err or f"exit {status}"}
    state = line["state"]
    notes = []
    if state["libcuda"] != "not requested":
        notes.append(f"libcuda {state['libcuda']}, cuInit {state['cuInit']}")
    if state["context"] not in ("not requested", "no libcuda"):
        notes.append(f"context: {state['context']}")
    threads = f"{state['threads_in_process']} threads"
    if state["threads_after_compiles"] != state["threads_in_process"]:
        threads += f", {state['threads_after_compiles']} after the compiles"
    notes.append(threads)
    # NVRTC 13 opens libcuda itself for its result cache; seen here after the compiles.
    if any(name.startswith("libcuda.so") for name in state["cuda_libraries_mapped"]):
        notes.append("libcuda mapped" + (" (by NVRTC)" if state["libcuda"] == "not requested" else ""))
    return {"state": label, "samples_ms": line["per_run_ms"], "ptx": line["ptx_fnv1a"],
            "notes": "; ".join(notes), "raw": line}


def first_only_state(label, probe, processes, env, out_dir):
    samples, ptx, errors = [], None, []
    for i in range(processes):
        result = probe_state(f"{label}_{i}", probe_words(probe, 0), env, out_dir)
        if "error" in result:
            errors.append(result["error"])
            continue
        samples += result["samples_ms"]
        ptx = result["ptx"]
    if not samples:
        return {"state": label, "error": "; ".join(errors)}
    return {"state": label, "samples_ms": samples, "ptx": ptx,
            "notes": f"first compile of each of {len(samples)} processes"}


def bench_jit_state(label, bench_jit, env, out_dir):
    json_path = os.path.join(out_dir, label.replace("/", "_") + ".json")
    words = [bench_jit, f"--benchmark_filter={BENCH_FILTER}", f"--benchmark_out={json_path}",
             "--benchmark_out_format=json"]
    status, _, samples, err = run(words, env, os.path.join(out_dir, label.replace("/", "_") + ".log"),
                                  timeout=180, sample=True)
    if status != 0:
        return [{"state": label, "error": err or f"exit {status}"}]
    with open(json_path, encoding="utf-8") as f:
        document = json.load(f)
    context = document.get("context", {})
    seen = (f"device {context.get('device', '?')[:24]}; at most {samples['max_threads']} threads; mapped: "
            + (", ".join(sorted(samples["cuda_libraries"])) or "no CUDA library seen"))
    rows = []
    cujit_times = [b["real_time"] for b in document["benchmarks"]
                   if b["name"].startswith("cujit/nvrtc/tiny/ptx") and b.get("run_type") == "iteration"]
    if cujit_times:
        rows.append({"state": f"{label}/cujit", "samples_ms": cujit_times,
                     "notes": f"per-repetition means; {seen}"})
    for b in document["benchmarks"]:
        if not b["name"].startswith("pair/nvrtc/tiny/ptx"):
            continue
        if b.get("error_occurred"):
            rows.append({"state": f"{label}/pair", "error": b.get("error_message", "errored")})
            continue
        for side in ("floor", "cujit"):
            estimate = b[f"{side}_s"] * 1e3
            half = b[f"{side}_noise"] * estimate
            rows.append({"state": f"{label}/pair_{side}", "median_ms": estimate,
                         "interval_ms": (estimate - half, estimate + half),
                         "n": int(b["rounds"]),
                         "notes": f"ratio {b['ratio']:.3f} [{b['ratio_low']:.3f}, {b['ratio_high']:.3f}]; {seen}"})
    return rows or [{"state": label, "error": "no matching benchmark in the output"}]


CUDA_CORE_CHILD = r"""
import json, os, sys, time
source_path, runs, with_context = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
try:
    from cuda.core import Device, Program, ProgramOptions
except ImportError:
    from cuda.core.experimental import Device, Program, ProgramOptions
import cuda.core
if with_context:
    Device(0).set_current()
source = open(source_path, encoding="utf-8").read()
options = ProgramOptions(arch="compute_90", relocatable_device_code=True)
def compile_once():
    return bytes(Program(source, "c++", options).compile("ptx").code)
compile_once()
times = []
for _ in range(runs):
    start = time.perf_counter()
    ptx = compile_once()
    times.append((time.perf_counter() - start) * 1e3)
mapped = sorted({l.rstrip().rsplit("/", 1)[-1] for l in open("/proc/self/maps")
                 if "/libcuda.so" in l or "/libcupti.so" in l or "/libnvrtc" in l})
print(json.dumps({"per_run_ms": times, "ptx": ptx.rstrip(b"\0").decode("utf-8", "replace"),
                  "version": getattr(cuda.core, "__version__", "unknown"),
                  "options": [str(o) for o in getattr(options, "_formatted_options", [])],
                  "threads": len(os.listdir("/proc/self/task")), "mapped": mapped}))
"""


def cuda_core_state(label, runs, with_context, env, out_dir, reference_ptx_path):
    words = [sys.executable, "-c", CUDA_CORE_CHILD, SOURCE, str(runs), "1" if with_context else "0"]
    status, out, _, err = run(words, env, os.path.join(out_dir, label.replace("/", "_") + ".log"), 180)
    if status != 0:
        return {"state": label, "error": err.splitlines()[-1] if err else f"exit {status}"}
    line = json.loads(out.strip().splitlines()[-1])
    same = "unknown"
    if reference_ptx_path and os.path.exists(reference_ptx_path):
        with open(reference_ptx_path, encoding="utf-8") as f:
            same = "same PTX as the probe" if f.read() == line["ptx"] else "PTX DIFFERS from the probe's"
    return {"state": label, "samples_ms": line["per_run_ms"],
            "notes": f"cuda.core {line['version']}; {same}; {line['threads']} threads; "
                     f"mapped: {', '.join(line['mapped'])}"}


# ---- the run ------------------------------------------------------------------------------

def measure(args, cache_disabled, out_dir):
    probe = os.path.join(args.build, "bench", "probes", "probe_nvrtc_floor")
    bench_jit = os.path.join(args.build, "bench", "bench_jit")
    env = environment(cache_disabled)
    ptx_path = os.path.join(out_dir, "probe.ptx")
    rows = [
        probe_state("probe/alone", probe_words(probe, args.runs, "--ptx-out", ptx_path), env, out_dir),
        probe_state("probe/idle_threads_4", probe_words(probe, args.runs, "--threads", "4"), env, out_dir),
        probe_state("probe/busy_thread_1", probe_words(probe, args.runs, "--busy-threads", "1"), env, out_dir),
        probe_state("probe/libcuda_cuInit", probe_words(probe, args.runs, "--load-libcuda"), env, out_dir),
        probe_state("probe/context", probe_words(probe, args.runs, "--context"), env, out_dir),
        # What the floor inside bench_jit compiled before it was paired: -I core/device, no
        # in-memory headers, the program named after the target.
        probe_state("probe/old_floor_options",
                    probe_words(probe, args.runs, "--option", "-I" + DEVICE_DIR, headers=False, name="ptx"),
                    env, out_dir),
        first_only_state("probe/first_compile", probe, args.first_processes, env, out_dir),
    ]
    tail = [
        # The bare probe again: how far two identical processes drift apart in this pass.
        probe_state("probe/alone_again", probe_words(probe, args.runs), env, out_dir),
    ]
    if not args.skip_bench_jit:
        rows += bench_jit_state("bench_jit/device_visible", bench_jit, env, out_dir)
        rows += bench_jit_state("bench_jit/no_device", bench_jit,
                                environment(cache_disabled, CUDA_VISIBLE_DEVICES=""), out_dir)
    rows.append(cuda_core_state("cuda_core/no_context", args.runs, False, env, out_dir, ptx_path))
    rows.append(cuda_core_state("cuda_core/context", args.runs, True, env, out_dir, ptx_path))
    return rows + tail


def summarise(rows):
    """Medians and intervals; "differs": the row's interval lies wholly outside the band the
    two bare-probe runs of this pass span (their intervals' union) and its median is more
    than DRIFT away from the bare probe's, so that drift between identical processes (up
    to 7% on a shared 2-core VM) is not read as an effect of the state."""
    for row in rows:
        if "samples_ms" in row:
            row["median_ms"] = median(row["samples_ms"])
            row["interval_ms"] = median_interval(row["samples_ms"])
            row["n"] = len(row["samples_ms"])
    alone = [r for r in rows if r["state"] in ("probe/alone", "probe/alone_again") and "median_ms" in r]
    if not alone:
        return
    band = (min(r["interval_ms"][0] for r in alone), max(r["interval_ms"][1] for r in alone))
    for row in rows:
        if "median_ms" not in row:
            continue
        row["vs_alone"] = row["median_ms"] / alone[0]["median_ms"]
        low, high = row["interval_ms"]
        row["differs"] = (low > band[1] or high < band[0]) and abs(row["vs_alone"] - 1) > DRIFT
        if "ptx" in row and row["ptx"] != alone[0]["ptx"]:
            row["notes"] = f"PTX differs from probe/alone; {row.get('notes', '')}"


def table(cache, rows):
    lines = [f"\nCUDA_CACHE_DISABLE {cache}", f"{'state':34} {'median ms':>9}  {'95% interval':>17} {'n':>4} "
             f"{'x alone':>7} differs  notes"]
    for row in rows:
        if "error" in row:
            lines.append(f"{row['state']:34} {'-':>9}  {'-':>17} {'-':>4} {'-':>7} {'-':7}  error: {row['error']}")
            continue
        low, high = row["interval_ms"]
        ratio = f"{row['vs_alone']:.2f}" if "vs_alone" in row else "-"
        differs = ("yes" if row["differs"] else "no") if "differs" in row else "-"
        lines.append(f"{row['state']:34} {row['median_ms']:9.2f}  [{low:7.2f}, {high:7.2f}] {row['n']:4d} "
                     f"{ratio:>7} {differs:7}  {row.get('notes', '')}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", required=True, help="build directory holding bench/bench_jit and the probe")
    parser.add_argument("--out", required=True, help="directory for the children's output and summary.json")
    parser.add_argument("--runs", type=int, default=30, help="timed compiles per probe / cuda.core process")
    parser.add_argument("--first-processes", type=int, default=5, help="processes for the first-compile state")
    parser.add_argument("--skip-bench-jit", action="store_true", help="leave bench_jit out")
    args = parser.parse_args()
    if args.runs < 1 or args.first_processes < 1:
        parser.error("--runs and --first-processes must be at least 1")
    args.build = os.path.abspath(args.build)
    probe = os.path.join(args.build, "bench", "probes", "probe_nvrtc_floor")
    if not os.access(probe, os.X_OK):
        parser.error(f"{probe} is not built (cmake --build {args.build} --target probe_nvrtc_floor bench_jit)")
    summary = {"host_cpus": os.cpu_count(), "load_avg_at_start": os.getloadavg(), "runs": args.runs,
               "bench_filter": BENCH_FILTER, "states": {}}
    ok = True
    started = time.monotonic()
    for cache_disabled in (True, False):
        cache = "=1" if cache_disabled else "unset"
        out_dir = os.path.join(args.out, "cache_disabled" if cache_disabled else "cache_unset")
        os.makedirs(out_dir, exist_ok=True)
        rows = measure(args, cache_disabled, out_dir)
        summarise(rows)
        ok = ok and any(r["state"] == "probe/alone" and "median_ms" in r for r in rows)
        print(table(cache, rows), flush=True)
        summary["states"][cache] = [{k: v for k, v in r.items() if k != "raw"} for r in rows]
    summary["wall_s"] = time.monotonic() - started
    print(f"\n{summary['wall_s']:.0f} s. Intervals: 95% for the median (sign test; the pair's from its "
          f"counters). 'differs': outside both bare-probe runs' intervals and over {DRIFT:.0%} away. "
          f"Logs and summary.json in {args.out}")
    with open(os.path.join(args.out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1, default=list)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
