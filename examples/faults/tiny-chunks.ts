// Fault: tasks too small. 40,000 rows in chunks of 40 rows: 1,000 tasks per stage, each
// doing next to nothing, so handing them out costs more than running them.
// Expected: tasks-too-small.
import { chain, dataset, even, K, perChunk } from "./common.ts"

export default (o: { log?: (line: string) => void } = {}) =>
  chain("tiny-chunks", dataset("tiny_X", even(1_000, 40), 2), [perChunk("scaled", K.scale, [2]), perChunk("shifted", K.scale, [0.5])], o)
