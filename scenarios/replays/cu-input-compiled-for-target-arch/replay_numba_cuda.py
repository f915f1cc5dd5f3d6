"""Replay of NVIDIA/numba-cuda PR #429 through numba-cuda: a CUDA C++ link input
(scenarios/fixtures/scale_kernel.cu) added to numba-cuda's linker made for sm_80 (cc=(8, 0),
as the dispatcher makes it for a kernel), on a device that is not sm_80.

Reported: the .cu input was compiled for the current GPU, not the link's target: the cubin
is not sm_80, or the link fails on the mismatch: outcome "compiled-for-device".
Fixed: the cubin is for sm_80: outcome "compiled-for-target".
Prints, as its last line, CUJIT_REPLAY {"outcome": ..., "detail": ..., "toolkit": ...}.
"""
import json
import pathlib
import struct
import sys


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
    from numba import cuda
    from numba.cuda.cudadrv import driver
except Exception as error:  # an import that fails is an outcome too, never a traceback
    report("import-error", failure(error))

FIXTURES = pathlib.Path(__file__).resolve().parent.parent.parent / "fixtures"
TARGET = (8, 0)


def toolkit():
    try:
        return "CUDA runtime %d.%d" % tuple(cuda.runtime.get_version())
    except Exception as error:  # the version is for the record; its absence is not the outcome
        return "unknown (%s)" % type(error).__name__


def cubin_sm(cubin):
    """The SM number a CUDA ELF is for: e_flags bits 8..15 from ABI version 8, bits 0..7 before."""
    data = bytes(cubin)
    if data[:4] != b"\x7fELF" or len(data) < 0x34:
        return None
    flags = struct.unpack_from("<I", data, 0x30)[0]
    return (flags >> 8) & 0xFF if data[8] >= 8 else flags & 0xFF


if not cuda.is_available():
    report("needs-device", "numba.cuda.is_available() is False")
device_cc = cuda.get_current_device().compute_capability
if tuple(device_cc) == TARGET:
    report("needs-device", "the device is sm_80 itself: the case needs a device of another architecture", toolkit())
try:
    # Linker.new(cc=...) until the linker became cuda.core's; _Linker(cc=...) since, whose
    # complete() gives an ObjectCode rather than the cubin's bytes.
    if hasattr(driver, "Linker") and hasattr(driver.Linker, "new"):
        linker = driver.Linker.new(cc=TARGET)
    else:
        linker = driver._Linker(cc=TARGET)
    linker.add_cu_file(str(FIXTURES / "scale_kernel.cu"))
    linked = linker.complete()
    cubin = getattr(linked, "code", linked)
except AttributeError as error:  # the linker's API moved: the case cannot be expressed here
    report("api-missing", failure(error), toolkit())
except Exception as error:
    text = failure(error)
    mismatch = any(word in text.lower() for word in ("arch", "target", "sm_%d%d" % tuple(device_cc)))
    report("compiled-for-device" if mismatch else "link-error", text, toolkit())
sm = cubin_sm(cubin)
if sm == TARGET[0] * 10 + TARGET[1]:
    report("compiled-for-target", "cubin for sm_%d (device sm_%d%d)" % ((sm,) + tuple(device_cc)), toolkit())
report("compiled-for-device", "cubin for sm_%s, not sm_80 (device sm_%d%d)" % ((sm,) + tuple(device_cc)), toolkit())
