"""Run Tessera's engine benchmark graphs with dask's local schedulers.

Builds the same shapes as bench/engine/BenchGraphs.ts (fanout: a root and n-1 leaves that
depend on it, all leaves requested; tree: binary reduction over L leaves, 2L-1 tasks,
root requested; chain: n tasks in a line) out of a no-op function and times
dask.threaded.get(num_workers=W) and dask.get (synchronous, for the per-task overhead).
Prints one JSON object per line. Usage: python3 dask_graphs.py SHAPE N WORKERS REPEATS
"""
import json
import statistics
import sys
import time

import dask
import dask.local
import dask.threaded


def noop(*args):
    return None


def fanout(n):
    dsk = {"root": (noop,)}
    keys = []
    for i in range(1, n):
        k = f"leaf-{i}"
        dsk[k] = (noop, "root")
        keys.append(k)
    return dsk, keys or ["root"]


def tree(n):
    leaves = 1
    while leaves * 2 - 1 < n:
        leaves *= 2
    dsk = {}
    level = []
    for i in range(leaves):
        k = f"leaf-{i}"
        dsk[k] = (noop,)
        level.append(k)
    depth = 1
    while len(level) > 1:
        nxt = []
        for i in range(0, len(level), 2):
            k = f"add-{depth}-{i // 2}"
            dsk[k] = (noop, level[i], level[i + 1])
            nxt.append(k)
        level = nxt
        depth += 1
    return dsk, level


def chain(n):
    dsk = {"step-0": (noop,)}
    for i in range(1, n):
        dsk[f"step-{i}"] = (noop, f"step-{i - 1}")
    return dsk, [f"step-{n - 1}"]


def timed(get, dsk, keys, repeats, **kw):
    get(dsk, keys, **kw)  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        get(dsk, keys, **kw)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    shape, n, workers, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    dsk, keys = {"fanout": fanout, "tree": tree, "chain": chain}[shape](n)
    threaded = timed(dask.threaded.get, dsk, keys, repeats, num_workers=workers)
    sync = timed(dask.get, dsk, keys, repeats)
    print(json.dumps({
        "graph": shape,
        "tasks": len(dsk),
        "workers": workers,
        "dask": dask.__version__,
        "seconds": threaded,
        "tasksPerSecond": len(dsk) / threaded,
        "overheadMicros": sync / len(dsk) * 1e6,
    }))


if __name__ == "__main__":
    main()
