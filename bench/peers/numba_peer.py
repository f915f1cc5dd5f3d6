"""numba-cuda on the scenarios cujit times: first launch of a kernel linking an external
CUDA C++ file (cold, new process), its cache=True hit in a new process, and compile_ptx
with abi="c". Usage: numba_peer.py OUT.json SCENARIO_DIR [REPETITIONS]"""
import os
import sys
import tempfile

import peer_json

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "numba_child.py")


def main():
    out, scenario_dir = sys.argv[1], sys.argv[2]
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    benchmarks = []
    try:
        import numpy
        numpy.row_stack = numpy.vstack  # numba-cuda 0.30.4 with this machine's numpy
        import numba
        from numba import cuda, int32
        version = getattr(numba, "__version__", "unknown")
        try:
            import numba_cuda
            version += " / numba-cuda " + getattr(numba_cuda, "__version__", "unknown")
        except ImportError:
            pass
    except Exception as error:  # no numba here: say so in the JSON
        peer_json.write(out, "numba-cuda", "missing", peer_json.failure("peer/numba", str(error)))
        return 0
    external = os.path.abspath(os.path.join(scenario_dir, "fixtures", "peers", "numba_dev_add.cu"))
    name = "peer/numba/first_launch_external_cu_new_process"
    try:
        benchmarks += peer_json.entries(
            name, [peer_json.run_child(CHILD, "cold", external) for _ in range(reps)])
    except Exception as error:
        benchmarks += peer_json.failure(name, str(error))
    # numba-cuda 0.30.4 cannot cache a kernel that links files ("Cannot pickle
    # CUDACodeLibrary with linking files"): its cache hit is timed on the same kernel
    # without the external file.
    name = "peer/numba/cache_hit_new_process/no_link"
    try:
        with tempfile.TemporaryDirectory() as cache_dir:
            peer_json.run_child(CHILD, "cached", external, cache_dir)  # populates the cache
            benchmarks += peer_json.entries(
                name, [peer_json.run_child(CHILD, "cached", external, cache_dir) for _ in range(reps)])
    except Exception as error:
        benchmarks += peer_json.failure(name, str(error))
    name = "peer/numba/compile_ptx_c_abi"
    try:
        def add(x, y):
            return x + y
        benchmarks += peer_json.entries(
            name, peer_json.measure(lambda: cuda.compile_ptx(add, int32(int32, int32), device=True, abi="c"), reps))
    except Exception as error:
        benchmarks += peer_json.failure(name, str(error))
    peer_json.write(out, "numba-cuda", version, benchmarks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
