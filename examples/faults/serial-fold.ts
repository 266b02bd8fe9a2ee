// Fault: a serial stage. A fold of 16 steps, each needing the one before (about 60 ms
// of work each), where a tree would do: one worker works, the others wait.
// Expected: serial-stage.
import * as ChunkedArray from "../../src/dsl/ChunkedArray.ts"
import * as Pipeline from "../../src/dsl/Pipeline.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { K } from "./common.ts"

const fold = Pipeline.stage("fold", (_: Record<string, never>) => {
  const specs = new Map<string, TaskGraph.TaskSpec>()
  let previous: unknown = 0
  let key = ""
  for (let i = 0; i < 16; i++) {
    key = `('fold_step', ${i})`
    specs.set(key, { key, kernel: K.foldStep, args: [previous, 0.06], name: "fold_step" })
    previous = TaskGraph.ref(key)
  }
  return ChunkedArray.computeDelayed<number>({ _tag: "Delayed", key, specs })
})

export default (o: { log?: (line: string) => void } = {}) => {
  const p = Pipeline.make("serial-fold", o.log === undefined ? {} : { log: o.log })
  p.add(fold, {})
  return p
}
