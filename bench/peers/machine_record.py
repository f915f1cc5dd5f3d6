"""The run record (docs/benchmarks.md, "Run record") for benchmark JSON written from
Python: the exec-to-first-result driver and the peers. The record is the one bench_jit
writes, asked of it with one short benchmark, so every result names its machine, driver,
toolkit libraries and vendor-cache state the same way; fields from Python when bench_jit
cannot answer."""
import json
import os
import platform
import subprocess
import tempfile
import time

SCHEMA = "1"
HERE = os.path.dirname(os.path.abspath(__file__))


def _tail(text, limit=800):
    text = text.strip() if isinstance(text, str) else ""
    return text if len(text) <= limit else "..." + text[-limit:]


def _read_small(path, limit=65536):
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def _git_commit():
    """As bench_jit's record: a named CUJIT_GIT_COMMIT first, then the tree's own commit."""
    env_commit = os.environ.get("CUJIT_GIT_COMMIT", "")
    if env_commit and all(c in "0123456789abcdef" for c in env_commit):
        return env_commit
    try:
        done = subprocess.run(["git", "-C", HERE, "rev-parse", "--verify", "HEAD"], capture_output=True, text=True,
                              timeout=30, check=False)
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return "unknown"


def _source_digest():
    """As bench_jit's record: CUJIT_SOURCE_DIGEST when it is 16 lower-case hex digits."""
    digest = os.environ.get("CUJIT_SOURCE_DIGEST", "")
    return digest if len(digest) == 16 and all(c in "0123456789abcdef" for c in digest) else "unknown"


def fallback_record(reason):
    """The run record's main fields, from Python, for when bench_jit cannot write it."""
    device = "unknown"
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=60, check=False)
        if done.returncode == 0 and done.stdout.strip():
            device = done.stdout.strip().splitlines()[0].strip()
        else:
            device = "none (nvidia-smi: " + _tail(done.stderr or done.stdout or "no answer", 100) + ")"
    except (OSError, subprocess.TimeoutExpired) as error:
        device = f"none (nvidia-smi: {error})"
    release = "none"
    proc = _read_small("/proc/driver/nvidia/version")
    if proc:
        for line in proc.splitlines():
            if line.startswith("NVRM version:"):
                words = [w for w in line.split() if w.replace(".", "").isdigit() and "." in w]
                release = words[0] if words else "unknown"
    cpu = "unknown"
    for line in (_read_small("/proc/cpuinfo") or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
            cpu = value.strip()
            break
    try:
        load = "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        load = "unknown"
    return {"run_record_source": f"run.py fallback ({reason})", "cujit_schema": SCHEMA,
            "cujit_git_commit": _git_commit(), "cujit_git_tree": "unknown",
            "cujit_source_digest": _source_digest(), "cujit_mode": "full", "device": device, "driver_release": release,
            "vendor_cache": "cold" if os.environ.get("CUDA_CACHE_DISABLE") == "1" else "vendor-cache-warm",
            "cuda_module_loading": os.environ.get("CUDA_MODULE_LOADING", "unset"), "host_cpu_model": cpu,
            "host_load_avg": load, "host_name": platform.node(), "date": time.strftime("%Y-%m-%dT%H:%M:%S")}


def run_record(build):
    """The run record bench_jit writes (bench/support/run_record.cpp: the same fields as
    every cujit benchmark JSON), from one short CPU benchmark of it; the fallback when it
    cannot."""
    bench_jit = os.path.join(build, "bench", "bench_jit")
    if not os.access(bench_jit, os.X_OK):
        return fallback_record(f"no bench_jit at {bench_jit}")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "record.json")
        try:
            done = subprocess.run([bench_jit, "--benchmark_filter=^cujit/kernel_link/tiny/memory_hit",
                                   "--benchmark_min_time=0.01", "--cujit-repetitions=1", f"--benchmark_out={out}",
                                   "--benchmark_out_format=json"], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300,
                                  check=False)
            if done.returncode != 0:
                return fallback_record(f"bench_jit exited {done.returncode}: {_tail(done.stderr, 200)}")
            with open(out, encoding="utf-8") as f:
                context = json.load(f)["context"]
        except (OSError, ValueError, KeyError, TypeError, subprocess.TimeoutExpired) as error:
            return fallback_record(f"bench_jit's record unreadable: {error}")
    if not isinstance(context, dict):
        return fallback_record("bench_jit's context is not an object")
    context.pop("executable", None)
    context["run_record_source"] = "bench_jit"
    return context


