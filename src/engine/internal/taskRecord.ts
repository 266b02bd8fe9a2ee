/**
 * The one place a TaskRecord is built: from a task's timing row (`taskTiming.ts`), its
 * result's description and the keys around it. The driver's executors (job.ts `record`)
 * and a cluster worker's plugins (cluster/pluginRunner.ts) both call {@link buildTaskRecord},
 * so a record reads the same wherever it is made.
 *
 * A new object per task, its optional fields absent when unset: a callback may keep it
 * (docs/engine.md, "Records a hook may keep").
 *
 * @since 0.1.0
 * @internal
 */
import type { TaskRecord } from "../EngineEvents.ts"
import type { ResultInfo } from "./kernels.ts"
import { Timing } from "./taskTiming.ts"

/** @since 0.1.0 @internal */
export type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/**
 * Why an erred task failed, for its TaskRecord (`error`, `traceback`).
 *
 * @since 0.1.0
 * @internal
 */
export interface TaskFailure {
  readonly error: string
  readonly traceback: string
}

/**
 * What a TaskRecord is built from. Callers keep one and refill it (no object per task).
 * `rows[o ...]` is the task's timing row; `shift` moves its timestamps onto the record's
 * clock (0 when they are on it already).
 *
 * @since 0.1.0
 * @internal
 */
export class RecordSource {
  key = ""
  name = ""
  host = ""
  workerId = 0
  threadId = ""
  rows: ArrayLike<number> = noRows
  o = 0
  shift = 0
  info: ResultInfo = noInfo
  dependencies: ReadonlyArray<string> = noKeys
  dependents: ReadonlyArray<string> = noKeys
  state: "memory" | "erred" = "memory"
  stage: string | undefined = undefined
  mainThread = false
  failure: TaskFailure | undefined = undefined
  /** Drops what the source referenced (rows, info, failure), once its record is built. */
  clear(): void {
    this.rows = noRows
    this.info = noInfo
    this.failure = undefined
    this.dependencies = noKeys
    this.dependents = noKeys
  }
}

const noRows: ArrayLike<number> = []
const noKeys: ReadonlyArray<string> = []
const noInfo: ResultInfo = { nbytes: 0, chunks: 0, shape: [], dtype: "", type: "" }

/**
 * The ResultInfo of an erred task (no result: no bytes, shape, dtype or type).
 *
 * @since 0.1.0
 * @internal
 */
export const erredInfo: ResultInfo = noInfo

/**
 * The TaskRecord `s` describes, a new object. The source's key lists are used as they
 * are (the caller passes arrays of the record's own).
 *
 * @since 0.1.0
 * @internal
 */
export const buildTaskRecord = (s: RecordSource): TaskRecord => {
  const f = s.rows
  const o = s.o
  const d = s.shift
  const cpu = f[o + Timing.cpuTime]!
  // one object literal, the optional fields added after it: a spread inside the literal
  // puts every record on V8's slow path (docs/engine.md, "Measured costs behind the code")
  const r: Mutable<TaskRecord> = {
    key: s.key,
    name: s.name,
    host: s.host,
    workerId: s.workerId,
    threadId: s.threadId,
    phases: {
      gather: [f[o + Timing.gatherStart]! + d, f[o + Timing.gatherStop]! + d],
      compute: [f[o + Timing.computeStart]! + d, f[o + Timing.computeStop]! + d],
      transfer: [f[o + Timing.transferStart]! + d, f[o + Timing.transferStop]! + d]
    },
    cpuTime: Number.isNaN(cpu) ? 0 : cpu,
    nbytes: s.info.nbytes,
    shape: s.info.shape,
    dtype: s.info.dtype,
    type: s.info.type,
    dependencies: s.dependencies,
    dependents: s.dependents,
    state: s.state
  }
  const peak = f[o + Timing.peakMemory]!
  if (!Number.isNaN(peak)) r.peakMemory = peak
  const io = f[o + Timing.ioBytes]!
  if (!Number.isNaN(io)) r.ioBytes = io
  const gpu = f[o + Timing.gpuTime]!
  if (!Number.isNaN(gpu)) r.gpuTime = gpu
  if (s.stage !== undefined) r.stage = s.stage
  if (s.mainThread) r.mainThread = true
  if (s.failure !== undefined) {
    r.error = s.failure.error
    r.traceback = s.failure.traceback
  }
  return r
}
