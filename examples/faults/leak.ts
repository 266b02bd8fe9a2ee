// Fault: memory growth. Every chunk a worker scales is also copied into a module-level
// array that is never emptied (96 chunks of 2 MiB). Expected: memory-growth.
import { chain, dataset, even, K, perChunk } from "./common.ts"

export default (o: { log?: (line: string) => void } = {}) =>
  chain("leak", dataset("leak_X", even(96, 65_536), 4), [perChunk("kept", K.leakyScale)], o)
