"""Replay of NVIDIA/numba-cuda PR #650 through numba-cuda: a kernel with cache=True that
allocates an array (NRT) is compiled and cached in one process with NUMBA_CUDA_ENABLE_NRT=1;
a second process with NUMBA_CUDA_ENABLE_NRT=0 and the same NUMBA_CACHE_DIR calls it again.
Each run is a child of this program (this file with --child), so each reads the setting
when numba is imported, as a user's separate runs do.

Reported: the second run reused the cached kernel, and loading it failed with an unresolved
NRT function ("Unresolved extern function 'NRT_incref'"): outcome "stale-nrt-kernel".
Fixed: the cache entry is not served with NRT off: the kernel is compiled again, which, with
NRT off, fails to type the allocation (or runs): outcome "recompiled". Served from the cache
without that failure is "served-from-cache" (neither: the detail says what happened).
Prints, as its last line, CUJIT_REPLAY {"outcome": ..., "detail": ..., "toolkit": ...}.
"""
import json
import os
import subprocess
import sys
import tempfile


def report(outcome, detail="", toolkit=""):
    print("CUJIT_REPLAY " + json.dumps({"outcome": outcome, "detail": str(detail)[:1500], "toolkit": toolkit}))
    sys.exit(0)


def failure(error):
    return "%s: %s" % (type(error).__name__, error)


def child():
    """One run: prints CHILD {"ran": ..., "error": ..., "hits": ..., "toolkit": ...}."""
    result = {"ran": False, "error": "", "hits": None, "toolkit": "", "device": True}
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
            def nrt_kernel(out):
                tmp = np.zeros(4, dtype=np.int32)  # allocated through NRT when NRT is on
                for i in range(4):
                    tmp[i] = i + 1
                total = 0
                for i in range(4):
                    total += tmp[i]
                out[0] = total

            out = cuda.to_device(np.zeros(1, dtype=np.int32))
            try:
                nrt_kernel[1, 1](out)
                cuda.synchronize()
                result["ran"] = int(out.copy_to_host()[0]) == 10
            finally:
                try:
                    result["hits"] = sum(nrt_kernel.stats.cache_hits.values())
                except Exception:
                    result["hits"] = None
    except Exception as error:
        result["error"] = failure(error)
    print("CHILD " + json.dumps(result))


def run(cache_dir, nrt):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, NUMBA_CUDA_ENABLE_NRT="1" if nrt else "0")
    done = subprocess.run([sys.executable, "-B", os.path.abspath(__file__), "--child"], env=env,
                          capture_output=True, text=True, timeout=240)
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("CHILD "):
            return json.loads(line[6:])
    return {"ran": False, "error": "no result (exit %d): %s" % (done.returncode, (done.stdout + done.stderr)[-800:]),
            "hits": None, "toolkit": "", "device": True}


if len(sys.argv) > 1 and sys.argv[1] == "--child":
    child()
    sys.exit(0)

try:
    cache_dir = tempfile.mkdtemp(prefix="cujit-replay-cache-")
    first = run(cache_dir, True)
    if not first["device"]:
        report("needs-device", "numba.cuda.is_available() is False", first["toolkit"])
    if not first["ran"]:
        report("setup-error", "with NRT on the kernel did not run: %s" % first["error"], first["toolkit"])
    second = run(cache_dir, False)
except Exception as error:
    report("error", failure(error))
detail = "NRT off: ran=%s, cache hits=%s, error=%s" % (second["ran"], second["hits"], second["error"] or "none")
# The reported failure: loading code that calls an NRT function nothing defines.
unresolved = any(word in second["error"].lower() for word in ("unresolved", "undefined", "extern function"))
if "NRT_" in second["error"] and unresolved:
    report("stale-nrt-kernel", detail, second["toolkit"])
if second["hits"]:
    # Served from the cache with NRT off, without the reported failure: neither outcome.
    report("served-from-cache", detail, second["toolkit"])
report("recompiled", detail, second["toolkit"])
