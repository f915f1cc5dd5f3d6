"""Replay of NVIDIA/cuda-python#2351 through cuda.core: LTO-IR (scenarios/fixtures
mixed_kernel.cu, dev_add.cu and dev_mul.cu compiled with link_time_optimization) linked to a
cubin with Linker on this machine's driver and nvJitLink, as the cujit scenario links its
LTO-IR fixtures. The report's configuration is a driver whose major version is newer than
nvJitLink's; the replay records both versions in its detail.

Reported: Linker chose the driver's cuLink*, which cannot take LTO-IR ("Unknown code_type
associated with ObjectCode: ltoir"): outcome "ltoir-refused". Fixed: it links: "ok".
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

ARCH = "sm_90"


def driver_version():
    try:
        from cuda.bindings import driver
        error, version = driver.cuDriverGetVersion()
        return "driver CUDA %d.%d" % (version // 1000, version % 1000 // 10)
    except Exception as error:  # for the record only
        return "driver version unknown (%s)" % type(error).__name__


def ltoir(name):
    options = ProgramOptions(arch=ARCH, relocatable_device_code=True, link_time_optimization=True)
    return Program((FIXTURES / name).read_text(), "c++", options=options).compile("ltoir")


versions = "%s, %s" % (driver_version(), toolkit())
try:
    objects = [ltoir("mixed_kernel.cu"), ltoir("dev_add.cu"), ltoir("dev_mul.cu")]
except Exception as error:
    report("setup-error", failure(error), toolkit())
try:
    linked = Linker(*objects, options=LinkerOptions(arch=ARCH, link_time_optimization=True)).link("cubin")
except Exception as error:
    text = failure(error)
    refused = "code_type" in text or "ltoir" in text.lower()
    report("ltoir-refused" if refused else "link-error", "%s (%s)" % (text, versions), toolkit())
report("ok", "linked: %r (%s)" % (linked, versions), toolkit())
