"""dask.diagnostics overhead on a no-op fan-out (a root and n-1 leaves depending on it,
all leaves requested), the shape of Tessera's BenchGraphs.fanout: dask.threaded.get with
W workers, unprofiled vs inside Profiler() + ResourceProfiler(dt=0.1) + CacheProfiler().
A warm-up of each on 10 leaves, then REPEATS pairs, the order alternating (AB, BA, ...) so drift
falls on both alike. Prints one JSON line: median wall ms of each (plain_ms,
profiled_ms) and every run (plain_all, profiled_all, pair i = run i of each).
Usage: python3 dask_diagnostics.py N W REPEATS
"""
import json
import os
import statistics
import sys
import time

import dask
import dask.threaded
from dask.diagnostics import CacheProfiler, Profiler, ResourceProfiler

# the same fan-out as the engine benchmark (bench/engine/dask_graphs.py)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "engine"))
from dask_graphs import fanout  # noqa: E402


def main():
    n, workers, reps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    dsk, keys = fanout(n)

    def run_plain(ks):
        t0 = time.perf_counter()
        dask.threaded.get(dsk, ks, num_workers=workers)
        return (time.perf_counter() - t0) * 1000

    def run_profiled(ks):
        t0 = time.perf_counter()
        with Profiler(), ResourceProfiler(dt=0.1), CacheProfiler():
            dask.threaded.get(dsk, ks, num_workers=workers)
        return (time.perf_counter() - t0) * 1000

    run_plain(keys[:10])
    run_profiled(keys[:10])
    plain, profiled = [], []
    for i in range(reps):
        if i % 2 == 0:
            plain.append(run_plain(keys))
            profiled.append(run_profiled(keys))
        else:
            profiled.append(run_profiled(keys))
            plain.append(run_plain(keys))
    print(json.dumps({
        "version": dask.__version__,
        "plain_ms": statistics.median(plain),
        "profiled_ms": statistics.median(profiled),
        "plain_all": plain,
        "profiled_all": profiled,
    }))


main()
