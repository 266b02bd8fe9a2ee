"""Run Tessera's engine benchmark graphs on dask.distributed's LocalCluster.

The same shapes as bench/engine/dask_graphs.py (imported from it) on
LocalCluster(n_workers=W, processes=True, threads_per_worker=1), timed through
Client.get after one warm-up, with new keys for every run (the scheduler may still hold
the results of the run before under the old ones); cluster start-up is not timed. Prints
one JSON object.
Usage: python3 dask_distributed_graphs.py SHAPE N WORKERS REPEATS
"""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import distributed  # noqa: E402
from dask_graphs import chain, fanout, tree  # noqa: E402


def renamed(dsk, keys, tag):
    """The graph with every key suffixed by `tag`: each timed run gets new keys, so the
    scheduler cannot hand back results it still holds from the run before."""
    r = {k: f"{k}-{tag}" for k in dsk}
    return ({r[k]: tuple(r.get(a, a) if isinstance(a, str) else a for a in t) for k, t in dsk.items()},
            [r[k] for k in keys])


def main():
    shape, n, workers, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    dsk, keys = {"fanout": fanout, "tree": tree, "chain": chain}[shape](n)
    with distributed.LocalCluster(n_workers=workers, processes=True, threads_per_worker=1, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            client.get(*renamed(dsk, keys, "warm"))  # warm-up
            times = []
            for r in range(repeats):
                g, ks = renamed(dsk, keys, f"r{r}")
                t0 = time.perf_counter()
                client.get(g, ks)
                times.append(time.perf_counter() - t0)
    seconds = statistics.median(times)
    print(json.dumps({
        "graph": shape,
        "tasks": len(dsk),
        "workers": workers,
        "distributed": distributed.__version__,
        "seconds": seconds,
        "tasksPerSecond": len(dsk) / seconds,
    }))


if __name__ == "__main__":
    main()
