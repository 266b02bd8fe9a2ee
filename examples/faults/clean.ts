// A clean pipeline: 48 chunks of 5,000 rows, a kernel with real work per row, two
// workers. Nothing should be of high severity.
import { chain, dataset, even, K, perChunk } from "./common.ts"

export default (o: { log?: (line: string) => void } = {}) =>
  chain("clean", dataset("clean_X", even(48, 5_000), 2), [perChunk("worked", K.work, [400])], o)
