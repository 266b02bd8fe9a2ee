// Fault: data skew. 12 chunks of 5,000 rows and one of 100,000 (20x the rest); the
// per-row work makes the big chunk's task 20x as long. Expected: data-skew.
import { chain, dataset, even, K, perChunk } from "./common.ts"

export default (o: { log?: (line: string) => void } = {}) =>
  chain("skewed-chunk", dataset("skew_X", [...even(6, 5_000), 100_000, ...even(6, 5_000)], 2), [perChunk("worked", K.work, [600])], o)
