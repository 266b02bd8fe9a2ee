"""Run Tessera's engine benchmark graphs on dask.distributed's LocalCluster.

The same shapes as bench/engine/dask_graphs.py (imported from it) on
LocalCluster(n_workers=W, processes=True, threads_per_worker=1), timed through
Client.get after one warm-up; cluster start-up is not timed. Prints one JSON object.
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


def main():
    shape, n, workers, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    dsk, keys = {"fanout": fanout, "tree": tree, "chain": chain}[shape](n)
    with distributed.LocalCluster(n_workers=workers, processes=True, threads_per_worker=1, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            client.get(dsk, keys)  # warm-up
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                client.get(dsk, keys)
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
