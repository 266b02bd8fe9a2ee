// Fault: GC pressure. Per number, an array of 16 small objects built and reduced: the
// kernel spends its time allocating and collecting. Expected: gc-pressure (needs the
// stack samples: profile without --no-sample).
import { chain, dataset, even, K, perChunk } from "./common.ts"

export default (o: { log?: (line: string) => void } = {}) =>
  chain("alloc-heavy", dataset("alloc_X", even(8, 10_000), 2), [perChunk("allocated", K.allocHeavy)], o)
