/**
 * The one place a TaskRecord is built: from a task's timing row (`taskTiming.ts`), its
 * result's description and the keys around it. The driver's executors (job.ts `record`)
 * and a cluster worker's plugins (cluster/pluginRunner.ts) both call {@link buildTaskRecord},
 * so a record reads the same wherever it is made.
 *
 * Two shapes: a new object per task, its optional fields absent when unset (a callback may
 * keep it), or one object refilled for each task (`Callbacks.transientRecords`), every
 * field present, optional ones undefined, so it keeps one hidden class.
 *
 * @since 0.1.0
 * @internal
 */
import type { TaskRecord } from "../EngineEvents.ts"
import type { ResultInfo } from "./kernels.ts"
import { optional, Timing } from "./taskTiming.ts"

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
 * A TaskRecord to refill for each task (transient records): every field present, the
 * optional ones undefined, so that it keeps one hidden class; undefined reads as absent.
 *
 * @since 0.1.0
 * @internal
 */
export const blankTaskRecord = (): Mutable<TaskRecord> =>
  ({
    key: "",
    name: "",
    host: "",
    workerId: 0,
    threadId: "",
    phases: { gather: [0, 0], compute: [0, 0], transfer: [0, 0] },
    cpuTime: 0,
    peakMemory: undefined,
    ioBytes: undefined,
    nbytes: 0,
    shape: [],
    dtype: "",
    type: "",
    dependencies: [],
    dependents: [],
    state: "memory",
    stage: undefined,
    mainThread: undefined,
    gpuTime: undefined,
    error: undefined,
    traceback: undefined
  }) as unknown as Mutable<TaskRecord>

type Optional = {
  peakMemory: number | undefined
  ioBytes: number | undefined
  gpuTime: number | undefined
  stage: string | undefined
  mainThread: boolean | undefined
  error: string | undefined
  traceback: string | undefined
}

/**
 * The TaskRecord `s` describes: `into` refilled when given (transient records), else a
 * new object. The source's key lists are used as they are (a refilled record's caller
 * passes arrays it reuses; a new record's, arrays of its own).
 *
 * @since 0.1.0
 * @internal
 */
export const buildTaskRecord = (s: RecordSource, into: Mutable<TaskRecord> | null): TaskRecord => {
  const f = s.rows
  const o = s.o
  const d = s.shift
  const cpu = f[o + Timing.cpuTime]!
  if (into !== null) {
    const ph = into.phases as { gather: [number, number]; compute: [number, number]; transfer: [number, number] }
    ph.gather[0] = f[o + Timing.gatherStart]! + d
    ph.gather[1] = f[o + Timing.gatherStop]! + d
    ph.compute[0] = f[o + Timing.computeStart]! + d
    ph.compute[1] = f[o + Timing.computeStop]! + d
    ph.transfer[0] = f[o + Timing.transferStart]! + d
    ph.transfer[1] = f[o + Timing.transferStop]! + d
    into.key = s.key
    into.name = s.name
    into.host = s.host
    into.workerId = s.workerId
    into.threadId = s.threadId
    into.cpuTime = Number.isNaN(cpu) ? 0 : cpu
    into.nbytes = s.info.nbytes
    into.shape = s.info.shape
    into.dtype = s.info.dtype
    into.type = s.info.type
    into.dependencies = s.dependencies
    into.dependents = s.dependents
    into.state = s.state
    const x = into as Optional
    x.peakMemory = optional(f, o, Timing.peakMemory)
    x.ioBytes = optional(f, o, Timing.ioBytes)
    x.gpuTime = optional(f, o, Timing.gpuTime)
    x.stage = s.stage
    x.mainThread = s.mainThread ? true : undefined
    x.error = s.failure?.error
    x.traceback = s.failure?.traceback
    return into
  }
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
