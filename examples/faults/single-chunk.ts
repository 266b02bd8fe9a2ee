// Fault: too few tasks. The whole dataset in one chunk, made by a kernel whose work is
// per chunk (0.6 s): one worker computes, the others wait. Expected: too-few-tasks.
import { chain, dataset, K, perChunk } from "./common.ts"

export default (o: { log?: (line: string) => void } = {}) =>
  chain("single-chunk", dataset("one_X", [50_000], 2, K.fillAndWork, [0.6]), [perChunk("scaled", K.scale, [2])], o)
