#!/usr/bin/env python3
"""Exec to first result: how long a new process takes from exec to the first checked
result of one kernel, for the raw Driver API (the floor), cujit and peers (CuPy,
numba-cuda, cuda.core). docs/benchmarks.md ("Exec to first result") says what is timed.

Usage: run.py --build BUILD_DIR --out OUT.json [--rounds N] [--programs raw_driver,cujit,...]

Setup runs every program once (filling cujit's, CuPy's and numba's disk caches; cujit's run
writes the cubin the floor loads). Then N rounds, each running every program once in an
order shuffled per round, one process at a time; the parent times exec to the arrival of the
child's result line, and the child reports its context and build + launch times.

Exit 0: the floor and cujit ran every round and were correct (a missing or failing peer is an
errored entry in the JSON); 1: the floor or cujit failed (the reason on stderr and in the
JSON); 2: a wrong command line.
"""
import argparse
import json
import math
import os
import platform
import random
import selectors
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "peers"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "reports"))

from cujit_reports import stats as paired_stats  # noqa: E402 (the one Python copy of the statistics)
import peer_json  # noqa: E402
from machine_record import fallback_record, run_record  # noqa: E402

FLOOR = "raw_driver"
REQUIRED = (FLOOR, "cujit")
PROGRAMS = ("raw_driver", "cujit", "cupy", "numba_cuda", "cuda_core")
PARTS = ("whole_process", "context", "build_launch")
MIN_ROUNDS = 9  # fewer give no useful 95% interval (docs/benchmarks.md, "Why 9")
DEFAULT_ROUNDS = 21
DEFAULT_TIMEOUT_S = 120.0
MAX_STDOUT = 1 << 20  # a child writing more than this is broken
SOURCE = os.path.join(HERE, "saxpy.cu")


@dataclass
class Program:
    """One program: how setup and the timed rounds run it, and what it needs."""
    name: str
    argv: list  # timed rounds
    setup_argv: list = None  # the setup run (default: argv)
    env: dict = field(default_factory=dict)  # added to the parent's environment
    cache: str = ""  # the cache state of the timed rounds, in words (the JSON context)
    cache_dir: str = None  # must hold files after the setup run (a cache it fills)
    needs_file: str = None  # must exist before the setup run (the floor's cubin)
    missing: str = None  # why the program cannot run at all (not built), or None


@dataclass
class ChildRun:
    ok: bool
    error: str = ""
    whole_process_s: float = 0.0
    context_s: float = 0.0
    build_launch_s: float = 0.0
    version: str = None


# ---------------------------------------------------------------------------------------
# One child


def _tail(text, limit=800):
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def _signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _kill_group(process):
    """SIGKILL to the child's own process group (it was started in a new session, so the
    group is the child and what it started), then reap the child."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def _parse_result(line, name):
    """The result dict from a child's line, or raises ValueError saying what is wrong."""
    try:
        result = json.loads(line)
    except ValueError as error:
        raise ValueError(f"result line is not JSON ({error})") from error
    if not isinstance(result, dict):
        raise ValueError("result line is not a JSON object")
    if result.get("program") != name:
        raise ValueError(f"result line names program {result.get('program')!r}, expected {name!r}")
    for key in ("context_s", "build_launch_s"):
        value = result.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"result line's {key} is {value!r}, not a time in seconds")
    if not isinstance(result.get("ok"), bool):
        raise ValueError(f"result line's ok is {result.get('ok')!r}, not true or false")
    if not isinstance(result.get("error", ""), str):
        raise ValueError("result line's error is not a string")
    return result


def _is_result_line(line):
    """A line that claims to be the result: a JSON object with a program field (other lines
    are a library's chatter, kept for the error message)."""
    stripped = line.strip()
    if not stripped.startswith(b"{"):
        return False
    try:
        value = json.loads(stripped.decode("utf-8", "replace"))
    except ValueError:
        return False
    return isinstance(value, dict) and "program" in value


def run_child(name, argv, env, timeout_s):
    """Runs one program to its result line and exit; a ChildRun, never an exception.
    whole_process_s runs from just before the process is created to the moment its result
    line was read from the pipe."""
    with tempfile.TemporaryFile() as stderr_file:
        start = time.perf_counter()
        try:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr_file,
                                       env=env, start_new_session=True)
        except OSError as error:
            return ChildRun(False, f"cannot start {argv[0]}: {error.strerror or error}")
        deadline = start + timeout_s
        line, arrived, chatter, problem = _read_result_line(process, deadline)
        if problem is None and line is not None:
            problem = _drain(process, deadline)  # so that a chatty exit never blocks on the pipe
        if problem is None:
            try:
                process.wait(timeout=max(0.0, deadline - time.perf_counter()))
            except subprocess.TimeoutExpired:
                problem = "did not exit"
        if problem:
            _kill_group(process)
            if problem == "did not exit" or problem.startswith("timed out"):
                problem = (f"did not exit within the {timeout_s:g} s timeout after its result line" if line is not None
                           else f"timed out after {timeout_s:g} s (--timeout) without a result line; killed")
        process.stdout.close()
        stderr_file.seek(0)
        stderr = stderr_file.read(1 << 20).decode("utf-8", "replace")
    return _judge(name, process.returncode, line, arrived - start if arrived else 0.0, chatter, problem, stderr)


def _read_result_line(process, deadline):
    """(line, arrival time, other output, problem): reads stdout until a result line, EOF,
    the deadline or too much output."""
    buffer, chatter, total = b"", b"", 0
    fd = process.stdout.fileno()
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return None, None, chatter + buffer, "timed out before its result line"
            if not selector.select(remaining):
                continue
            chunk = os.read(fd, 65536)
            arrived = time.perf_counter()
            if not chunk:  # EOF: a last line without its newline still counts
                if _is_result_line(buffer):
                    return buffer.decode("utf-8", "replace"), arrived, chatter, None
                return None, None, chatter + buffer, None
            total += len(chunk)
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if _is_result_line(line):
                    return line.decode("utf-8", "replace"), arrived, chatter, None
                chatter += line + b"\n"
            if total > MAX_STDOUT:
                return None, None, chatter + buffer, f"wrote more than {MAX_STDOUT} bytes without a result line"


def _drain(process, deadline):
    """Reads and drops what the child writes after its result line, to EOF; a problem when
    the deadline passes first."""
    fd = process.stdout.fileno()
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return "did not exit"
            if selector.select(remaining) and not os.read(fd, 65536):
                return None


def _judge(name, returncode, line, whole_s, chatter, problem, stderr):
    """The ChildRun for what a child did."""
    def failed(message):
        details = []
        if chatter.strip():
            details.append("stdout: " + _tail(chatter.decode("utf-8", "replace"), 400))
        if stderr.strip():
            details.append("stderr: " + _tail(stderr))
        return ChildRun(False, message + ("; " + "; ".join(details) if details else ""))

    if problem and line is None:
        return failed(problem)
    if line is None:
        if returncode is not None and returncode < 0:
            return failed(f"killed by {_signal_name(-returncode)} before its result line")
        return failed(f"exited with status {returncode} without a result line")
    try:
        result = _parse_result(line, name)
    except ValueError as error:
        return failed(f"{error}: {_tail(line, 300)}")
    version = result.get("version")
    run = ChildRun(result["ok"], result.get("error", ""), whole_s, float(result["context_s"]),
                   float(result["build_launch_s"]), str(version) if version is not None else None)
    if not run.ok:  # its own reason; stderr (a traceback of the same) adds nothing
        return ChildRun(False, "reported ok=false: " + (run.error or "(no reason given)"), version=run.version)
    if problem:
        return failed(problem)
    if returncode != 0:
        how = f"was killed by {_signal_name(-returncode)}" if returncode < 0 else f"exited with status {returncode}"
        return failed(f"reported ok but {how}")
    return run


# ---------------------------------------------------------------------------------------
# Setup and rounds


@dataclass
class Measurement:
    programs: list  # Program, in the order given
    rounds: int
    seed: int
    times: dict = field(default_factory=dict)  # name -> part -> [seconds per round]
    errors: dict = field(default_factory=dict)  # name -> reason
    versions: dict = field(default_factory=dict)  # name -> version text from its setup run
    orders: list = field(default_factory=list)  # the order of each round


def _files_under(directory):
    count = 0
    for _, _, files in os.walk(directory):
        count += len(files)
    return count


def _child_env(program):
    env = dict(os.environ)
    env.update(program.env)
    return env


def setup(measurement, timeout_s, log):
    """Runs every program once in the order given; a program that fails is errored with
    its reason and takes no part in the rounds."""
    for program in measurement.programs:
        if program.missing:
            measurement.errors[program.name] = program.missing
            continue
        if program.needs_file and not os.path.isfile(program.needs_file):
            failed = ", ".join(measurement.errors) or "none"
            measurement.errors[program.name] = (f"setup: {program.needs_file} is missing (programs that failed "
                                                f"before it: {failed})")
            continue
        run = run_child(program.name, program.setup_argv or program.argv, _child_env(program), timeout_s)
        if run.version:
            measurement.versions[program.name] = run.version
        if not run.ok:
            measurement.errors[program.name] = "setup run: " + run.error
        elif program.cache_dir and _files_under(program.cache_dir) == 0:
            measurement.errors[program.name] = (f"setup run left its cache directory {program.cache_dir} empty: "
                                                "the timed runs would not be cache hits")
        status = "ok" if program.name not in measurement.errors else measurement.errors[program.name]
        log(f"setup {program.name}: {status}")


def run_rounds(measurement, timeout_s, log):
    """The timed rounds: every program still working, once a round, in an order shuffled
    per round. A program that fails stops taking part, errored with the round and reason;
    the rounds stop when the floor fails (nothing can be paired with it)."""
    rng = random.Random(measurement.seed)
    by_name = {p.name: p for p in measurement.programs}
    for name in by_name:
        if name not in measurement.errors:
            measurement.times[name] = {part: [] for part in PARTS}
    for index in range(measurement.rounds):
        order = [name for name in by_name if name not in measurement.errors]
        if FLOOR in by_name and FLOOR not in order:
            break
        rng.shuffle(order)
        measurement.orders.append(order)
        summary = []
        for name in order:
            run = run_child(name, by_name[name].argv, _child_env(by_name[name]), timeout_s)
            if not run.ok:
                measurement.errors[name] = f"round {index + 1}: {run.error}"
                summary.append(f"{name} FAILED")
                continue
            for part, value in (("whole_process", run.whole_process_s), ("context", run.context_s),
                                ("build_launch", run.build_launch_s)):
                measurement.times[name][part].append(value)
            summary.append(f"{name} {run.whole_process_s * 1e3:.1f} ms")
        log(f"round {index + 1}/{measurement.rounds}: " + ", ".join(summary))


def measure(programs, rounds, timeout_s, seed, log=lambda text: None):
    measurement = Measurement(programs, rounds, seed)
    setup(measurement, timeout_s, log)
    run_rounds(measurement, timeout_s, log)
    for name in list(measurement.times):
        if name in measurement.errors:
            del measurement.times[name]
    return measurement


# ---------------------------------------------------------------------------------------
# The JSON document


def _pair_entry(name, program_s, floor_s, rounds):
    stats = paired_stats.paired_ratio(program_s, floor_s)
    median = statistics.median(program_s)
    floor_median = statistics.median(floor_s)
    entry_name = f"pair/first_result/{name}/whole_process"
    entry = {"name": entry_name, "run_name": entry_name, "run_type": "iteration", "repetitions": 1,
             "repetition_index": 0, "iterations": 1, "real_time": median * 1e3, "cpu_time": median * 1e3,
             "time_unit": "ms", "program": name, "floor": FLOOR, "label": f"{name} / {FLOOR}"}
    entry.update(stats)
    entry.update({"rounds": rounds, "cujit_s": median, "floor_s": floor_median,
                  "cujit_noise": paired_stats.relative_noise(program_s),
                  "floor_noise": paired_stats.relative_noise(floor_s),
                  "same_output": 1})
    return entry


def benchmarks_of(measurement):
    """Per-round entries and aggregates per program and part, then one pair entry per
    program other than the floor; errored entries carry the reason."""
    out = []
    names = [p.name for p in measurement.programs]
    for name in names:
        for part in PARTS:
            entry_name = f"first_result/{name}/{part}"
            if name in measurement.errors:
                out += peer_json.failure(entry_name, measurement.errors[name])
            else:
                out += peer_json.entries(entry_name, measurement.times[name][part])
    floor_times = measurement.times.get(FLOOR, {}).get("whole_process")
    for name in names:
        if name == FLOOR:
            continue
        entry_name = f"pair/first_result/{name}/whole_process"
        if name in measurement.errors:
            out += peer_json.failure(entry_name, measurement.errors[name])
        elif not floor_times:
            out += peer_json.failure(entry_name, f"no floor to pair with: {FLOOR}: "
                                     + measurement.errors.get(FLOOR, "not run"))
        else:
            try:
                out.append(_pair_entry(name, measurement.times[name]["whole_process"], floor_times,
                                       len(floor_times)))
            except ValueError as error:
                out += peer_json.failure(entry_name, str(error))
    return out


VERSION_KEYS = {"cupy": "cupy_version", "numba_cuda": "numba_cuda_version", "cuda_core": "cuda_core_version"}


def context_of(measurement, record, timeout_s):
    context = dict(record)
    context["cujit_schema"] = peer_json.SCHEMA
    context["cujit_mode"] = "full"
    context["python"] = platform.python_version()
    context["first_result_rounds"] = str(measurement.rounds)
    context["first_result_order"] = f"shuffled per round (random.Random({measurement.seed}))"
    context["first_result_floor"] = FLOOR
    context["first_result_programs"] = ",".join(p.name for p in measurement.programs)
    context["first_result_timeout_s"] = f"{timeout_s:g}"
    context["first_result_problem"] = "saxpy.cu: y[i] = a * x[i] + y[i], n = 1048576 float32, checked exactly"
    for program in measurement.programs:
        context[f"first_result_cache_{program.name}"] = program.cache
        if program.name in VERSION_KEYS:
            version = measurement.versions.get(program.name)
            if version is None:
                version = "missing (" + _tail(measurement.errors.get(program.name, "no version reported"), 200) + ")"
            context[VERSION_KEYS[program.name]] = version
    return context


def document(measurement, record, timeout_s):
    return {"context": context_of(measurement, record, timeout_s), "benchmarks": benchmarks_of(measurement)}


# ---------------------------------------------------------------------------------------
# The run record


# ---------------------------------------------------------------------------------------
# The programs and the command line


def default_programs(build, work, python, names):
    """The five programs; `names` picks and orders them (setup runs cujit before the floor,
    which loads the cubin cujit's setup run writes)."""
    binaries = os.path.join(build, "bench", "first_result")
    cubin = os.path.join(work, "saxpy.cubin")

    def binary(target):
        path = os.path.join(binaries, target)
        return path, None if os.access(path, os.X_OK) else f"not built: no {path} (build target {target})"

    cujit_path, cujit_missing = binary("first_result_cujit")
    raw_path, raw_missing = binary("first_result_raw_driver")
    cujit_cache = os.path.join(work, "cujit-cache")
    cupy_cache = os.path.join(work, "cupy-cache")
    numba_cache = os.path.join(work, "numba-cache")
    table = {
        "cujit": Program("cujit", [cujit_path, SOURCE, "--expect-disk-hit"],
                         setup_argv=[cujit_path, SOURCE, "--write-cubin", cubin],
                         env={"CUJIT_CACHE": "disk", "CUJIT_CACHE_DIR": cujit_cache},
                         cache="cujit disk cache warm (CUJIT_CACHE_DIR filled by the setup run; every timed run must "
                               "be a disk hit, else it is an error)",
                         cache_dir=cujit_cache, missing=cujit_missing),
        "raw_driver": Program("raw_driver", [raw_path, cubin],
                              cache="no cache: cuModuleLoadData of the cubin cujit built (written by cujit's setup "
                                    "run)",
                              needs_file=cubin, missing=raw_missing),
        "cupy": Program("cupy", [python, os.path.join(HERE, "cupy_program.py"), SOURCE],
                        env={"CUPY_CACHE_DIR": cupy_cache},
                        cache="CuPy kernel cache warm (CUPY_CACHE_DIR filled by the setup run)", cache_dir=cupy_cache),
        "numba_cuda": Program("numba_cuda", [python, os.path.join(HERE, "numba_program.py")],
                              env={"NUMBA_CACHE_DIR": numba_cache},
                              cache="numba cache=True warm (NUMBA_CACHE_DIR filled by the setup run); numba compiles "
                                    "the same arithmetic written in Python, not saxpy.cu",
                              cache_dir=numba_cache),
        "cuda_core": Program("cuda_core", [python, os.path.join(HERE, "cuda_core_program.py"), SOURCE],
                             cache="none: cuda.core has no persistent cache, every run compiles saxpy.cu with NVRTC "
                                   "(NVRTC's own result cache follows CUDA_CACHE_DISABLE)"),
    }
    ordered = sorted(names, key=lambda n: (n != "cujit", names.index(n)))
    return [table[name] for name in ordered]


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", required=True, help="the CMake build directory (bench/first_result's programs, "
                                                       "bench/bench_jit for the run record)")
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help=f"timed rounds, at least {MIN_ROUNDS} (default {DEFAULT_ROUNDS})")
    parser.add_argument("--programs", default=",".join(PROGRAMS),
                        help="comma-separated, from " + ", ".join(PROGRAMS) + "; must include " + " and ".join(REQUIRED))
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        help=f"seconds one child may take to its exit (default {DEFAULT_TIMEOUT_S:g})")
    parser.add_argument("--seed", type=int, default=1, help="seed of the per-round shuffle (default 1)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter of the Python programs")
    parser.add_argument("--work-dir", help="where the caches and the cubin go (default: a new temporary "
                                           "directory, removed afterwards)")
    args = parser.parse_args(argv)
    if not MIN_ROUNDS <= args.rounds <= 1000:
        parser.error(f"--rounds {args.rounds}: must be {MIN_ROUNDS} to 1000 (fewer rounds give no useful 95% "
                     "interval)")
    if not (args.timeout > 0 and math.isfinite(args.timeout)):
        parser.error("--timeout must be a positive number of seconds")
    names = [n.strip() for n in args.programs.split(",") if n.strip()]
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        parser.error(f"--programs: unknown {', '.join(unknown)} (known: {', '.join(PROGRAMS)})")
    if len(set(names)) != len(names):
        parser.error("--programs: a program is named twice")
    absent = [n for n in REQUIRED if n not in names]
    if absent:
        parser.error(f"--programs must include {' and '.join(REQUIRED)} (the floor loads cujit's cubin and every "
                     f"ratio is over the floor); missing: {', '.join(absent)}")
    args.names = names
    return args


def write_json(path, doc):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    temp = f"{path}.tmp.{os.getpid()}"
    with open(temp, "w", encoding="utf-8") as out:
        json.dump(doc, out, indent=1)
        out.write("\n")
    os.replace(temp, path)


def exit_status(measurement, log):
    """1 with the reasons when the floor or cujit failed; 0 otherwise (peers' failures are
    listed, and errored entries in the JSON)."""
    for name, reason in measurement.errors.items():
        if name not in REQUIRED:
            log(f"peer {name} errored (an errored entry in the JSON): {reason}")
    failed = [name for name in REQUIRED if name in measurement.errors]
    for name in failed:
        log(f"FAILED: {name}: {measurement.errors[name]}")
    if failed:
        log("exec-to-first-result failed: " + " and ".join(failed) + " did not give a checked result (see above)")
        return 1
    return 0


def main(argv=None):
    args = parse_args(argv)

    def log(text):
        print(f"first_result: {text}", file=sys.stderr, flush=True)

    build = os.path.abspath(args.build)
    if not os.path.isdir(build):
        log(f"--build {args.build}: not a directory")
        return 2
    own_work = args.work_dir is None
    work = tempfile.mkdtemp(prefix="cujit-first-result-") if own_work else os.path.abspath(args.work_dir)
    os.makedirs(work, exist_ok=True)
    try:
        record = run_record(build)
        programs = default_programs(build, work, args.python, args.names)
        log(f"{args.rounds} rounds of {', '.join(p.name for p in programs)}; work directory {work}")
        measurement = measure(programs, args.rounds, args.timeout, args.seed, log)
        write_json(args.out, document(measurement, record, args.timeout))
        log(f"wrote {args.out}")
        return exit_status(measurement, log)
    finally:
        if own_work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
