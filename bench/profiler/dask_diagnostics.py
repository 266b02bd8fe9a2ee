"""dask.diagnostics overhead on a no-op fan-out (a root and n-1 leaves depending on it,
all leaves requested), the shape of Tessera's BenchGraphs.fanout: dask.threaded.get with
W workers, unprofiled vs inside Profiler() + ResourceProfiler() + CacheProfiler().
Prints one JSON line: median wall ms of each. Usage: python3 dask_diagnostics.py N W REPEATS
"""
import json
import statistics
import sys
import time

import dask
import dask.threaded
from dask.diagnostics import CacheProfiler, Profiler, ResourceProfiler


def noop(*args):
    return None


def fanout(n):
    dsk = {"root": (noop,)}
    keys = []
    for i in range(1, n):
        k = f"leaf-{i}"
        dsk[k] = (noop, "root")
        keys.append(k)
    return dsk, keys


def main():
    n, workers, reps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    dsk, keys = fanout(n)
    dask.threaded.get(dsk, keys[:10], num_workers=workers)
    plain, profiled = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        dask.threaded.get(dsk, keys, num_workers=workers)
        plain.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        with Profiler(), ResourceProfiler(dt=0.1), CacheProfiler():
            dask.threaded.get(dsk, keys, num_workers=workers)
        profiled.append((time.perf_counter() - t0) * 1000)
    print(json.dumps({
        "version": dask.__version__,
        "plain_ms": statistics.median(plain),
        "profiled_ms": statistics.median(profiled),
    }))


main()
