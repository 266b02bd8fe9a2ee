// Fault: a straggler. 16 equal chunks; the kernel making chunk 5 sleeps 1.5 s (same
// data, same code path otherwise). Expected: straggler.
import { chain, dataset, even, K, perChunk } from "./common.ts"

export default (o: { log?: (line: string) => void } = {}) =>
  chain("sleepy-chunk", dataset("sleepy_X", even(16, 5_000), 2, K.fillOrSleep, [5, 1.5]), [perChunk("worked", K.work, [20])], o)
