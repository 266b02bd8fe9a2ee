// Fault: memory pressure. 6 chunks of 64 MiB (1,048,576 rows × 8 columns), each scaled
// and kept (persisted) until the run ends: the run holds ~0.5-1 GiB at once (the chunks and their scaled copies). A real host
// has far more, so the default bar (80% of the host's memory in use) is not reached; the
// gallery lowers it to just above what the host had in use before the run
// (`--threshold memoryPressure=…`), which shows the rule without endangering the machine.
// Expected, with the lowered bar: memory-pressure.
import { chain, dataset, even, K, perChunk } from "./common.ts"

export default (o: { log?: (line: string) => void } = {}) =>
  chain("memory-hog", dataset("hog_X", even(6, 1 << 20), 8), [perChunk("kept", K.scale, [1])], o)
