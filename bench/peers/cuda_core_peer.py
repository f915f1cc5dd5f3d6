"""cuda.core on the scenarios cujit times: Program.compile of CUDA C++ to PTX and LTO-IR,
and Program.compile + Linker.link to a cubin. Usage: cuda_core_peer.py OUT.json SCENARIO_DIR [REPS]"""
import os
import sys

import peer_json


def main():
    out, scenario_dir = sys.argv[1], sys.argv[2]
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    try:
        try:
            from cuda.core import Device, Linker, LinkerOptions, Program, ProgramOptions
        except ImportError:
            from cuda.core.experimental import Device, Linker, LinkerOptions, Program, ProgramOptions
        import cuda.core
        version = getattr(cuda.core, "__version__", "unknown")
    except Exception as error:
        peer_json.write(out, "cuda.core", "missing", peer_json.failure("peer/cuda_core", str(error)))
        return 0
    device = Device()
    device.set_current()
    arch = "sm_" + "".join(str(v) for v in device.compute_capability)
    with open(os.path.join(scenario_dir, "fixtures", "scale_kernel.cu"), encoding="utf-8") as f:
        tiny = f.read()
    benchmarks = []

    def compile_to(target, relocatable=True):
        options = ProgramOptions(arch=arch, relocatable_device_code=relocatable,
                                 link_time_optimization=(target == "ltoir"))
        return Program(tiny, "c++", options).compile(target)

    for target in ("ptx", "ltoir"):
        name = f"peer/cuda_core/nvrtc/tiny/{target}"
        try:
            compile_to(target)
            benchmarks += peer_json.entries(name, peer_json.measure(lambda: compile_to(target), reps))
        except Exception as error:
            benchmarks += peer_json.failure(name, str(error))
    name = "peer/cuda_core/e2e_cubin/tiny"
    try:
        def e2e():
            code = compile_to("ptx")
            return Linker(code, options=LinkerOptions(arch=arch)).link("cubin")
        e2e()
        benchmarks += peer_json.entries(name, peer_json.measure(e2e, reps))
    except Exception as error:
        benchmarks += peer_json.failure(name, str(error))
    peer_json.write(out, "cuda.core", version, benchmarks, {"arch": arch})
    return 0


if __name__ == "__main__":
    sys.exit(main())
