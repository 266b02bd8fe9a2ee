// Fault: I/O bound. Every task reads the same 4 MiB file whole, synchronously, 12 times
// (bytes reported through TaskIo), then does next to nothing. Expected: io-bound.
import { writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { chain, dataset, even, K, perChunk } from "./common.ts"

export default (o: { log?: (line: string) => void; file?: string } = {}) => {
  const file = o.file ?? join(tmpdir(), `tessera-sync-io-${process.pid}.bin`)
  writeFileSync(file, new Uint8Array(4 << 20).fill(7))
  return chain("sync-io", dataset("io_X", even(16, 2_000), 2), [perChunk("read", K.readThenScale, [file, 12])], o)
}
