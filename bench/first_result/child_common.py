"""What the Python programs of the "exec to first result" family share: the problem (the
same inputs, launch shape and exact check as first_result.hpp) and the one JSON line each
prints. Each program records its start time on its first line, before any import, and
passes it to main()."""
import sys
import time
import traceback

N = 1 << 20
A = 2.0
BLOCK = 256
GRID = (N + BLOCK - 1) // BLOCK
KERNEL = "saxpy"


def inputs(numpy):
    """x[i] = i % 1024, y[i] = i % 7, as float32: every result a small whole number."""
    index = numpy.arange(N, dtype=numpy.int64)
    return (index % 1024).astype(numpy.float32), (index % 7).astype(numpy.float32)


def check(numpy, y):
    """None when y == a * x + y for the inputs above, exactly; else the first wrong element."""
    y = numpy.asarray(y)
    if y.shape != (N,):
        return f"result has shape {y.shape}, expected ({N},)"
    index = numpy.arange(N, dtype=numpy.int64)
    expected = (2 * (index % 1024) + index % 7).astype(numpy.float32)
    wrong = numpy.flatnonzero(y != expected)
    if wrong.size:
        i = int(wrong[0])
        return f"wrong result: y[{i}] = {float(y[i])}, expected {float(expected[i])} ({wrong.size} wrong)"
    return None


def _describe(error):
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= 2000 else text[:2000] + "..."


def main(program, t0, context, build_launch, source_needed=True):
    """Runs one program and prints its line; the exit status (0: checked correct).

    context() imports the library and makes the CUDA context current; it returns
    (state, version). build_launch(state, source_text) builds or loads the kernel, launches
    it and returns (numpy, host copy of y). The clock started at t0 (the script's first
    line), so context_s includes the imports, as a user's process pays them."""
    result = {"program": program, "context_s": 0.0, "build_launch_s": 0.0, "ok": False, "error": ""}
    status = 1
    t_context = None
    try:
        if source_needed and len(sys.argv) != 2:
            raise ValueError(f"usage: {sys.argv[0]} SOURCE.cu")
        try:
            state, version = context()
        except ImportError as error:
            result["error"] = f"cannot import {program}'s library (not installed?): {_describe(error)}"
            raise
        t_context = time.perf_counter()
        if version:
            result["version"] = str(version)
        source_text = None
        if source_needed:
            with open(sys.argv[1], encoding="utf-8") as source:
                source_text = source.read()
        numpy, y = build_launch(state, source_text)
        problem = check(numpy, y)
        result["ok"] = problem is None
        result["error"] = problem or ""
        status = 0 if problem is None else 1
    except Exception as error:  # every failure becomes the line's error, never a silent exit
        traceback.print_exc(file=sys.stderr)
        result["error"] = result["error"] or _describe(error)
    t_done = time.perf_counter()
    result["context_s"] = (t_context if t_context is not None else t_done) - t0
    result["build_launch_s"] = t_done - t_context if t_context is not None else 0.0
    import json  # after the clock: printing is the same for every Python program

    print(json.dumps(result), flush=True)
    return status
