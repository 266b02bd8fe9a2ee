// Fault: a worker killed mid-run. 16 chunks; a second stage of 0.1 s of work per chunk
// whose first task dies half-way (`process.exit` in its worker thread), once. The engine
// replaces the worker and runs the task again: the work done before the death is done
// twice, and the pool is a worker short until the replacement is ready.
// Expected: worker-lost (docs/diagnosis.md says why that rule, not recomputation).
import { rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { chain, dataset, even, K, perChunk } from "./common.ts"

export default (o: { log?: (line: string) => void; file?: string } = {}) => {
  // the marker that a worker died once (a fresh one per pipeline made)
  const marker = `${o.file ?? join(tmpdir(), `tessera-worker-killed-${process.pid}`)}.died`
  rmSync(marker, { force: true })
  return chain("worker-killed", dataset("killed_X", even(16, 2_000), 2), [perChunk("worked", K.workOrDie, [0.1, marker])], o)
}
