"""The families the A/B regression gate times (docs/benchmarks.md, "The gate").

Each family is one benchmark of one executable, run as its own process per arm and round
(reports/cujit_reports/ab_gate.py). A family is judged on up to three of four metrics:

  time         the benchmark's wall time per iteration, B / A
  cpu          the benchmark thread's CPU time per iteration, B / A: for families whose work
               all runs on that thread. Load from other processes stretches wall time, not
               this: on CI's two cores beside two CPU burners, a memory hit's round-to-round
               noise was 32% in wall time and 3.3% in thread CPU time. What it cannot see is
               work on other threads or in child processes, and waiting (a sleep, blocking
               I/O, a lock): the gate refuses a run whose benchmark shows either (its
               off_thread_cpu_s and waits counters, ab_gate.OFF_THREAD_LIMIT), so such a
               regression fails the gate as an error, and the family moves to `time`.
  own          cujit's own time (the `own_s` counter: wall time less the vendor libraries'),
               as the growth (own_B - own_A) / time_A: a regression in cujit's code that a
               vendor-dominated total hides still moves this
  floor_ratio  a pair's ratio to its raw-API floor (the `ratio` counter), B / A

The CPU families run on any machine (CI's A/B test); the GPU families need a device.
"""
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Family:
    name: str  # short, unique: the gate's row
    executable: str  # under <build>/bench/
    benchmark: str  # a --benchmark_filter regex naming exactly one benchmark
    metrics: tuple  # of "time", "cpu", "own", "floor_ratio"
    gpu: bool = False
    args: tuple = field(default_factory=tuple)  # more arguments for the executable
    # False where the planted slowdown (CUJIT_PLANTED_SLOWDOWN) cannot act on what is timed:
    # GPU time of a kernel is not cujit's host code.
    plantable: bool = True
    # Repetitions in each process; the round's value is their median (ab_gate.metrics_of).
    repetitions: int = 5
    env: tuple = field(default_factory=tuple)  # (NAME, VALUE) pairs for its processes


# Short processes: Google Benchmark's own minimum time would make each round seconds long.
SHORT = ("--benchmark_min_time=0.05",)
PAIR_ENV = (("CUJIT_PAIR_BUDGET_SECONDS", "1"),)

FAMILIES = (
    # ---- CPU (NVRTC, nvJitLink, the cache tiers) ----
    Family("memory_hit/tiny", "bench_jit", "^cujit/kernel_link/tiny/memory_hit/", ("cpu",), args=SHORT),
    Family("memory_hit_new_builder/tiny", "bench_jit", "^cujit/kernel_link/tiny/memory_hit_new_builder/",
           ("cpu",), args=SHORT),
    Family("disk_hit_new_process/tiny", "bench_jit", "^cujit/kernel_link/tiny/disk_hit_new_process/", ("time",),
           repetitions=1),
    Family("compile/tiny/ptx", "bench_jit", "^cujit/nvrtc/tiny/ptx/", ("cpu", "own"), repetitions=3),
    Family("link/ltoir_operator", "bench_jit", "^cujit/nvjitlink/ltoir_operator/", ("cpu", "own"), repetitions=3),
    # Wall time: cujit compiles this build's sources on several threads at once (the gate's
    # off-thread check refused `cpu` here, with 37% of the work on other threads).
    Family("e2e_cubin/external_cu", "bench_jit", "^cujit/e2e_cubin/external_cu/", ("time", "own"), repetitions=3),
    # A pair times cujit against its floor round by round inside one process and reports the
    # ratio; one such process a round, with a short budget of its own.
    Family("compile_pair/tiny/ptx", "bench_jit", "^pair/nvrtc/tiny/ptx/", ("floor_ratio",), repetitions=1,
           env=PAIR_ENV),
    Family("parallel_sources/k4", "bench_jit", "^pair/parallel_sources/", ("floor_ratio",), repetitions=1,
           env=PAIR_ENV),
    Family("reduce_build/memory_hit", "bench_reduce", "^cujit/reduce_build/memory_hit/", ("cpu",), args=SHORT),
    # ---- GPU ----
    Family("module_load/tiny", "bench_jit_gpu", "^cujit/module_load/tiny/", ("time", "own"), gpu=True, args=SHORT),
    Family("e2e_launchable/nrt", "bench_jit_gpu", "^cujit/e2e_launchable/nrt/", ("time", "own"), gpu=True,
           repetitions=3),
    Family("disk_hit_new_process_load/tiny", "bench_jit_gpu", "^cujit/kernel_build/tiny/disk_hit_new_process/",
           ("time",), gpu=True, repetitions=1),
    Family("stream_launch/empty", "bench_launch", "^cujit/stream_chain/empty/100/", ("time",), gpu=True, args=SHORT),
    # The chain's time is mostly the GPU running 100 kernels: a slowdown of the host-side
    # launch is a small part of it, so the planted slowdown cannot make it 10% slower.
    Family("graph_launch/empty", "bench_launch", "^cujit/graph_chain/empty/100/", ("time",), gpu=True, args=SHORT,
           plantable=False),
    Family("reduce_into/int32", "bench_reduce", "^cujit/reduce_into/int32_sum/4194304/", ("time",), gpu=True, plantable=False),
)

# What `--families` accepts besides names: the CPU families, the GPU ones, all.
GROUPS = {
    "cpu": tuple(f.name for f in FAMILIES if not f.gpu),
    "gpu": tuple(f.name for f in FAMILIES if f.gpu),
    "all": tuple(f.name for f in FAMILIES),
    # CI's A/B self-test: two fast CPU families, one a memo hit (repeated work), one a
    # compile (a spin proportional to the time).
    "ci": ("memory_hit/tiny", "compile/tiny/ptx"),
}


def select(spec):
    """The families a comma-separated list of names and group names asks for, in table
    order. ValueError naming an unknown word."""
    by_name = {f.name: f for f in FAMILIES}
    wanted = []
    for word in (w.strip() for w in spec.split(",")):
        if not word:
            continue
        names = GROUPS.get(word, (word,))
        for name in names:
            if name not in by_name:
                known = ", ".join(list(GROUPS) + list(by_name))
                raise ValueError(f"unknown gate family '{word}' (known: {known})")
            if by_name[name] not in wanted:
                wanted.append(by_name[name])
    if not wanted:
        raise ValueError("no gate family selected")
    return [f for f in FAMILIES if f in wanted]
