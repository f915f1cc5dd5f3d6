"""Replay of sm90a-ptx-for-sm90 through cuda.core and the driver linker it falls back to:
PTX with .target sm_90a (scenarios/fixtures/numba/add_i32_c_abi.ptx, as numba-cuda compiles
for an sm_90 device) linked for plain sm_90, once through cuda.core's Linker (nvJitLink,
arch="sm_90") and once through the driver's cuLink* (cuda.bindings.driver, for the current
context's device, which must be sm_90).

Found here: the driver linker accepted it while nvJitLink refused it: outcome
"linkers-disagree". Fixed: both refuse it: outcome "both-refuse". Other pairs:
"both-accept", "only-nvjitlink-accepts".
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

PTX = FIXTURES / "numba" / "add_i32_c_abi.ptx"


def driver_link(ptx):
    """Links ptx with cuLinkCreate/cuLinkAddData/cuLinkComplete in the primary context of
    device 0; returns None when it links, else the error with the linker's log."""
    from cuda.bindings import driver

    def check(result, what):
        if result[0] != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError("%s: %s" % (what, result[0]))
        return result[1:]

    (state,) = check(driver.cuLinkCreate(0, [], []), "cuLinkCreate")
    try:
        result = driver.cuLinkAddData(state, driver.CUjitInputType.CU_JIT_INPUT_PTX, ptx, len(ptx),
                                      b"add_i32_c_abi.ptx", 0, [], [])
        if result[0] != driver.CUresult.CUDA_SUCCESS:
            return "cuLinkAddData: %s" % (result[0],)
        result = driver.cuLinkComplete(state)
        if result[0] != driver.CUresult.CUDA_SUCCESS:
            return "cuLinkComplete: %s" % (result[0],)
        return None
    finally:
        driver.cuLinkDestroy(state)


try:
    device = Device(0)
    device.set_current()
    capability = device.compute_capability
except Exception as error:
    report("needs-device", failure(error), toolkit())
if (capability.major, capability.minor) != (9, 0):
    report("needs-device", "the driver links for the current device, which must be sm_90 here, not sm_%d%d"
           % (capability.major, capability.minor), toolkit())
ptx = PTX.read_bytes()
try:
    Linker(ObjectCode.from_ptx(ptx), options=LinkerOptions(arch="sm_90")).link("cubin")
    nvjitlink_error = None
except Exception as error:
    nvjitlink_error = failure(error)
try:
    driver_error = driver_link(ptx)
except Exception as error:
    report("setup-error", "driver linker: " + failure(error), toolkit())
detail = "nvJitLink: %s; driver: %s" % (nvjitlink_error or "accepted", driver_error or "accepted")
if nvjitlink_error and driver_error:
    report("both-refuse", detail, toolkit())
if nvjitlink_error:
    report("linkers-disagree", detail, toolkit())
report("only-nvjitlink-accepts" if driver_error else "both-accept", detail, toolkit())
