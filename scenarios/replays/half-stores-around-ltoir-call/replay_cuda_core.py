"""Replay of NVIDIA/numba-cuda-mlir PR #117 through cuda.core: the cujit scenario's kernel
(scenarios/fixtures/half_stores_around_call.cu: half2 stores before and after a call to
dev_add) and dev_add.cu, each compiled to LTO-IR, linked with link-time optimization (and
the linker's full optimization), loaded and launched on 4 threads with a = 5, b = -2.

Reported (numba-cuda-mlir): LTO miscompiled such stores, worked around by turning LTO
optimization off: outcome "wrong-result". Fixed: out = [3, 3, 5, 3, 7, 3, 9, 3]: "ok".
Prints, as its last line, CUJIT_REPLAY {"outcome": ..., "detail": ..., "toolkit": ...}.
"""
import ctypes
import json
import pathlib
import sys
import tempfile


def report(outcome, detail="", toolkit=""):
    print("CUJIT_REPLAY " + json.dumps({"outcome": outcome, "detail": str(detail)[:1500], "toolkit": toolkit}))
    sys.exit(0)


def failure(error):
    return "%s: %s" % (type(error).__name__, error)


try:  # cuda.core >= 0.5 exports its API at the top level; older releases under .experimental
    from cuda.core import Device, Linker, LinkerOptions, ObjectCode, Program, ProgramOptions
except ImportError:
    try:
        from cuda.core.experimental import Device, Linker, LinkerOptions, ObjectCode, Program, ProgramOptions
    except Exception as error:  # an import that fails is an outcome too, never a traceback
        report("import-error", failure(error))

FIXTURES = pathlib.Path(__file__).resolve().parent.parent.parent / "fixtures"


def toolkit():
    try:
        from cuda.bindings import nvjitlink
        return "nvJitLink %d.%d" % tuple(nvjitlink.version())
    except Exception as error:  # the version is for the record; its absence is not the outcome
        return "unknown (%s)" % type(error).__name__

EXPECTED = [3.0, 3.0, 5.0, 3.0, 7.0, 3.0, 9.0, 3.0]


def launch_kernel(device, kernel, args):
    """cuda.core's launch: launch(stream, config, kernel, *args) from 0.3, earlier
    launch(kernel, config, *args) with the stream in the config."""
    try:
        from cuda.core import LaunchConfig, launch
    except ImportError:
        from cuda.core.experimental import LaunchConfig, launch
    stream = device.create_stream()
    try:
        launch(stream, LaunchConfig(grid=1, block=4), kernel, *args)
    except TypeError:
        launch(kernel, LaunchConfig(grid=1, block=4, stream=stream), *args)
    stream.sync()


try:
    device = Device(0)
    device.set_current()
    capability = device.compute_capability
    arch = "sm_%d%d" % (capability.major, capability.minor)
except Exception as error:
    report("needs-device", failure(error), toolkit())
try:
    options = ProgramOptions(arch=arch, relocatable_device_code=True, link_time_optimization=True)
    objects = [Program((FIXTURES / name).read_text(), "c++", options=options).compile("ltoir")
               for name in ("half_stores_around_call.cu", "dev_add.cu")]
except Exception as error:
    report("setup-error", failure(error), toolkit())
try:
    linked = Linker(*objects, options=LinkerOptions(arch=arch, link_time_optimization=True)).link("cubin")
    kernel = linked.get_kernel("half_stores_around_call")
except Exception as error:
    report("link-error", failure(error), toolkit())
try:
    import numpy as np
    from cuda.bindings import driver

    try:  # cuda.core 1.x: the stream is a keyword-only argument; 0.x: optional
        out = device.allocate(4 * len(EXPECTED), stream=device.default_stream)
    except TypeError:
        out = device.allocate(4 * len(EXPECTED))
    device.sync()  # the allocation is ordered on the default stream, the launch on its own
    launch_kernel(device, kernel, (out, np.int32(5), np.int32(-2)))
    host = (ctypes.c_float * len(EXPECTED))()
    result = driver.cuMemcpyDtoH(ctypes.addressof(host), int(out.handle), ctypes.sizeof(host))
    if result[0] != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError("cuMemcpyDtoH: %s" % (result[0],))
    got = [float(value) for value in host]
except Exception as error:
    report("launch-error", failure(error), toolkit())
report("ok" if got == EXPECTED else "wrong-result", "out = %s (expected %s)" % (got, EXPECTED), toolkit())
