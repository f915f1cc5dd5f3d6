"""Replay of NVIDIA/numba-cuda-mlir#119 through numba-cuda: two device functions compiled
separately to LTO-IR with abi="c" (cuda.compile), declared with declare_device(abi="c") and
linked together into one kernel with lto=True, as the cujit scenario links its C-ABI LTO-IR.

Reported (numba-cuda-mlir): each LTO-IR defined the same global, and the link failed
("multiply defined"): outcome "link-error". Fixed: it links and computes: outcome "ok".
Prints, as its last line, CUJIT_REPLAY {"outcome": ..., "detail": ..., "toolkit": ...}.
"""
import json
import pathlib
import sys
import tempfile


def report(outcome, detail="", toolkit=""):
    print("CUJIT_REPLAY " + json.dumps({"outcome": outcome, "detail": str(detail)[:1500], "toolkit": toolkit}))
    sys.exit(0)


def failure(error):
    return "%s: %s" % (type(error).__name__, error)


try:
    import numpy as np

    # numba-cuda 0.30.4 calls numpy.row_stack, which numpy 2.5 removed (an incompatibility of
    # the installed pair, not the reported case).
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack
    from numba import cuda, types
except Exception as error:  # an import that fails is an outcome too, never a traceback
    report("import-error", failure(error))


def toolkit():
    try:
        return "CUDA runtime %d.%d" % tuple(cuda.runtime.get_version())
    except Exception as error:  # the version is for the record; its absence is not the outcome
        return "unknown (%s)" % type(error).__name__


def add_i32(x, y):
    return x + y


def add_f32(x, y):
    return x + y


if not cuda.is_available():
    report("needs-device", "numba.cuda.is_available() is False")
try:
    cc = cuda.get_current_device().compute_capability
    out_dir = pathlib.Path(tempfile.mkdtemp(prefix="cujit-replay-"))
    files = {}
    for name, function, signature in (("add", add_i32, types.int32(types.int32, types.int32)),
                                      ("add_f32", add_f32, types.float32(types.float32, types.float32))):
        code, _ = cuda.compile(function, signature, device=True, abi="c", abi_info={"abi_name": name},
                               output="ltoir", cc=cc)
        files[name] = out_dir / (name + ".ltoir")
        files[name].write_bytes(bytes(code))
except Exception as error:
    report("compile-error", failure(error), toolkit())
try:
    add = cuda.declare_device("add", "int32(int32, int32)", link=[str(files["add"])], abi="c")
    add_f = cuda.declare_device("add_f32", "float32(float32, float32)", link=[str(files["add_f32"])], abi="c")
except TypeError as error:  # a numba-cuda whose declare_device has no abi= cannot express the case
    report("no-c-abi-declaration", failure(error), toolkit())
try:
    @cuda.jit(lto=True)
    def kernel(out_i, out_f):
        out_i[0] = add(2, 3)
        out_f[0] = add_f(np.float32(0.5), np.float32(0.25))

    out_i = cuda.to_device(np.zeros(1, dtype=np.int32))
    out_f = cuda.to_device(np.zeros(1, dtype=np.float32))
    kernel[1, 1](out_i, out_f)  # compiles and links here
    cuda.synchronize()
    got = (int(out_i.copy_to_host()[0]), float(out_f.copy_to_host()[0]))
except Exception as error:
    text = failure(error)
    linking = any(word in text.lower() for word in ("link", "multipl", "defined more than once", "duplicate"))
    report("link-error" if linking else "error", text, toolkit())
report("ok" if got == (5, 0.75) else "wrong-result", "add(2, 3), add_f32(0.5, 0.25) = %r" % (got,), toolkit())
