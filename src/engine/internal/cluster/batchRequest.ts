/**
 * What one batch carries to its worker (`RunRequest`): its tasks with their arguments
 * (large literal arguments once per worker: literals.ts), where each input outside the
 * batch is held (the worker fetches it from a holder's data plane, preferring itself),
 * which results the driver wants back in the reply, the worker's pending releases and
 * literal drops (one message, not two), and what the worker plugins need to record it.
 *
 * @since 0.1.0
 * @internal
 */
import type { Job } from "../job.ts"
import { execKeyOf, taskLineage } from "../job.ts"
import type { TaskGraph } from "../../TaskGraph.ts"
import type { LiteralBook } from "./literals.ts"
import type { WorkerView } from "./members.ts"
import { ROW_STRIDE, type RunRequest, type RunTrace, workerRow } from "./protocol.ts"

/**
 * What a compute's batches are built from.
 *
 * @since 0.1.0
 * @internal
 */
export interface BatchContext {
  readonly job: Job
  readonly compute: number
  /** the driver's id on the workers (its literals' prefix) */
  readonly driver: string
  readonly literalBook: LiteralBook
  /** 1 for the driver's outputs: their values come back with the batch that makes them */
  readonly isRequested: Uint8Array
  /** releases waiting for their worker's next batch, by worker name */
  readonly releases: Map<string, Array<string>>
  /** the compute's worker plugins (none: no trace to send) */
  readonly pluginIds: ReadonlyArray<string>
  /** whether the driver's own hooks read the task records (else a profiled reply leaves them out) */
  readonly localRecords: boolean
  /** the live workers holding task `i`'s result */
  readonly holderNames: (i: number) => Array<string>
  readonly workers: ReadonlyMap<string, WorkerView>
}

/**
 * The request of a batch of `tasks` for worker `w` (`recover`: recomputing lost results,
 * recorded by no plugin). Takes the worker's pending releases and literal drops.
 *
 * @since 0.1.0
 * @internal
 */
export const batchRequest = (c: BatchContext, kind: "run" | "recover", w: WorkerView, tasks: ReadonlyArray<number>, profile: boolean): RunRequest => {
  const g = c.job.graph
  const inBatch = new Set(tasks)
  const inputs = new Map<string, ReadonlyArray<string>>()
  for (const i of tasks) {
    for (let j = g.depStart[i]!; j < g.depStart[i + 1]!; j++) {
      const dep = g.depList[j]!
      if (inBatch.has(dep)) continue
      const hs = c.holderNames(dep)
      inputs.set(g.keys[dep]!, hs.includes(w.name) ? [w.name] : hs)
    }
  }
  const want: Array<string> = []
  for (const i of tasks) if (c.isRequested[i]) want.push(g.keys[i]!)
  const literals = new Map<string, unknown>()
  const drop = c.literalBook.takeDropped(w.name)
  // this worker's pending releases travel with the batch (one message, not two)
  const release = c.releases.get(w.name)
  c.releases.delete(w.name)
  return {
    compute: c.compute,
    driver: c.driver,
    profile,
    tasks: tasks.map((i) => {
      const sp = g.specs[i]!
      return {
        key: sp.key,
        module: sp.kernel.module,
        name: sp.kernel.name,
        args: c.literalBook.prepare(sp.args, w.name, literals),
        ...(sp.output !== undefined ? { output: sp.output } : {}),
        ...(sp.stage !== undefined ? { stage: sp.stage } : {})
      }
    }),
    inputs: [...inputs],
    ...(literals.size > 0 ? { literals: [...literals] } : {}),
    ...(drop.length > 0 ? { drop } : {}),
    ...(want.length > 0 ? { want } : {}),
    ...(release !== undefined ? { release } : {}),
    ...(kind === "run" && c.pluginIds.length > 0 ? { trace: runTrace(c, w, tasks, inputs) } : {}),
    ...(profile && !c.localRecords ? { recs: false } : {})
  }
}

/** What `w` needs to record a batch for the plugins (see protocol.ts `RunTrace`). */
const runTrace = (c: BatchContext, w: WorkerView, tasks: ReadonlyArray<number>, inputs: ReadonlyMap<string, ReadonlyArray<string>>): RunTrace => {
  const { job, workers } = c
  const g = job.graph
  const rows = new Map<string, string>()
  for (const hs of inputs.values()) {
    for (const h of hs) {
      const v = workers.get(h)
      if (v !== undefined) rows.set(h, workerRow(v.host, v.address, v.pid, v.index * ROW_STRIDE))
    }
  }
  return {
    plugins: c.pluginIds,
    index: w.index,
    offset: w.offset,
    tasks: tasks.map((i) => [...taskLineage(job, i), g.specs[i]!.stage ?? ""] as const),
    inputs: [...inputs.keys()].map((k) => [k, execKeyOf(job, g.index.get(k)!)] as const),
    rows: [...rows],
    peers: [...workers.values()].filter((v) => v.alive && v !== w && v.host === w.host).map((v) => v.pid)
  }
}

/**
 * True when a list argument of `t` (`TaskGraph.refs`) names tasks both in the batch
 * (flagged in `member`) and outside it: the worker's batch graph cannot mix results it
 * makes with fetched values in one list, so `t` is not fused (it waits for its own round).
 *
 * @since 0.1.0
 * @internal
 */
export const mixedRefs = (g: TaskGraph, t: number, member: Uint8Array): boolean => {
  const plan = g.argPlan[t]
  if (plan === null || plan === undefined) return false
  for (const slot of plan) {
    if (typeof slot === "number") continue
    let inside = 0
    for (const x of slot) inside += member[x]!
    if (inside > 0 && inside < slot.length) return true
  }
  return false
}
