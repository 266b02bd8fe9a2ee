// Fault: a worker killed mid-run. 16 chunks of 0.1 s of work each; the worker making
// chunk 5 dies half-way (`process.exit` in its thread), once. The engine replaces the
// worker and runs the task again: the work done before the death is done twice.
// Expected: recomputation (docs/diagnosis.md says why that rule names it).
import { rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { chain, dataset, even, K, perChunk } from "./common.ts"

export default (o: { log?: (line: string) => void; file?: string } = {}) => {
  // the marker that the worker died once (a fresh one per pipeline made)
  const marker = `${o.file ?? join(tmpdir(), `tessera-worker-killed-${process.pid}`)}.died`
  rmSync(marker, { force: true })
  return chain("worker-killed", dataset("killed_X", even(16, 2_000), 2, K.fillOrDie, [0.1, 5, marker]), [perChunk("scaled", K.scale, [2])], o)
}
