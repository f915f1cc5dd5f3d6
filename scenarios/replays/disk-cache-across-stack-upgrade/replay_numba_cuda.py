"""Replay of NVIDIA/numba-cuda#748 through numba-cuda: a kernel with cache=True is compiled
in a child process (this file with --child) into an empty NUMBA_CACHE_DIR; the replay then
reads the version stamp the cache index starts with (the pickled object numba compares
before it uses any entry) and checks whether numba-cuda's own version is part of it. An
upgrade cannot be installed here, so the stamp is what decides whether one would be noticed.

Reported: the stamp is numba's version only; upgrading numba-cuda alone keeps serving the
old compiler's kernels: outcome "keyed-on-numba-only". Fixed: numba-cuda's version is in
the stamp: outcome "keyed-on-numba-cuda".
Prints, as its last line, CUJIT_REPLAY {"outcome": ..., "detail": ..., "toolkit": ...}.
"""
import json
import os
import pathlib
import pickle
import subprocess
import sys
import tempfile


def report(outcome, detail="", toolkit=""):
    print("CUJIT_REPLAY " + json.dumps({"outcome": outcome, "detail": str(detail)[:1500], "toolkit": toolkit}))
    sys.exit(0)


def failure(error):
    return "%s: %s" % (type(error).__name__, error)


def child():
    """Compiles and runs the cached kernel; prints CHILD {"error", "device", "toolkit"}."""
    result = {"error": "", "device": True, "toolkit": ""}
    try:
        import numpy as np

        if not hasattr(np, "row_stack"):  # numba-cuda 0.30.4 with numpy 2.5 (see the other replays)
            np.row_stack = np.vstack
        from numba import cuda

        try:
            result["toolkit"] = "CUDA runtime %d.%d" % tuple(cuda.runtime.get_version())
        except Exception as error:
            result["toolkit"] = "unknown (%s)" % type(error).__name__
        if not cuda.is_available():
            result["device"] = False
        else:
            @cuda.jit(cache=True)
            def cached_kernel(out):
                out[0] = 42

            out = cuda.to_device(np.zeros(1, dtype=np.int32))
            cached_kernel[1, 1](out)
            cuda.synchronize()
    except Exception as error:
        result["error"] = failure(error)
    print("CHILD " + json.dumps(result))


if len(sys.argv) > 1 and sys.argv[1] == "--child":
    child()
    sys.exit(0)

try:
    from importlib import metadata

    numba_cuda_version = metadata.version("numba-cuda")
    cache_dir = tempfile.mkdtemp(prefix="cujit-replay-cache-")
    done = subprocess.run([sys.executable, "-B", os.path.abspath(__file__), "--child"],
                          env=dict(os.environ, NUMBA_CACHE_DIR=cache_dir), capture_output=True, text=True, timeout=240)
    lines = [line for line in done.stdout.splitlines() if line.startswith("CHILD ")]
    if not lines:
        report("error", "the child printed no result (exit %d): %s" % (done.returncode, (done.stdout + done.stderr)[-800:]))
    result = json.loads(lines[-1][6:])
    if not result["device"]:
        report("needs-device", "numba.cuda.is_available() is False", result["toolkit"])
    if result["error"]:
        report("setup-error", "the cached kernel did not run: " + result["error"], result["toolkit"])
    indexes = sorted(pathlib.Path(cache_dir).rglob("*.nbi"))
    if not indexes:
        report("no-cache-index", "no .nbi index under NUMBA_CACHE_DIR after a cache=True kernel ran", result["toolkit"])
    with open(indexes[0], "rb") as index:
        stamp = pickle.load(index)  # numba's index format: the version stamp, then the entries
except Exception as error:
    report("error", failure(error))
detail = "index %s starts with %r; numba-cuda is %s" % (indexes[0].name, stamp, numba_cuda_version)
report("keyed-on-numba-cuda" if numba_cuda_version in repr(stamp) else "keyed-on-numba-only", detail, result["toolkit"])
