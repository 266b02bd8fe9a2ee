/**
 * The cluster executor's wire protocol, on Effect Cluster and Effect RPC:
 *
 * - `TesseraWorker`, the entity every worker process hosts. Its entity id is the
 *   worker's name and its shard group is that same name (one shard per group), so the
 *   scheduler addresses one worker process exactly; each worker runner is assigned its own
 *   group only. RPCs: `Run` (a batch of tasks), `Get` (results, for the driver),
 *   `DataPort` (where peers fetch results: the data plane, dataPlane.ts), `Release`, `Cancel` (a compute's share), `Time` (clock samples, liveness),
 *   `Info` (host name, threads, pid), `Stats` (counters), `Plugins` (start and close
 *   worker plugins).
 * - `RunnerStorageRpcs`: the runner registry and shard locks (`RunnerStorage`'s encoded
 *   form), served by the scheduler to its workers, so a cluster needs no database.
 *
 * Task batches and results travel as one `Uint8Array` each, written by `node:v8`'s
 * serializer (typed arrays as raw bytes; see {@link encodeValue}), so the Effect schemas
 * stay small and large chunks are not re-encoded field by field.
 *
 * Leaves out: versioning between a scheduler and workers of different Tessera builds.
 *
 * @since 0.1.0
 * @internal
 */
import { Schema } from "effect"
import { ClusterSchema, Entity } from "effect/cluster"
import { Rpc, RpcGroup } from "effect/rpc"
import { deserialize, serialize } from "node:v8"
import type { TaskOutput } from "../../TaskGraph.ts"
import { KEEP, mapDeep } from "./frames.ts"

const Blob = Schema.Uint8Array

/**
 * The trace-row stride between worker processes: worker `index`'s thread `t` is row
 * `index × ROW_STRIDE + t` (`worker-{host}-{row}`).
 *
 * @since 0.1.0
 * @internal
 */
export const ROW_STRIDE = 16

/** @since 0.1.0 @internal */
export const Run = Rpc.make("Run", { payload: { blob: Blob }, success: Blob })
/** @since 0.1.0 @internal */
export const Get = Rpc.make("Get", {
  payload: { compute: Schema.Number, keys: Schema.Array(Schema.String), from: Schema.String },
  success: Schema.Struct({ blob: Blob, serialize: Schema.Number })
})
/**
 * The port of the worker's data plane (dataPlane.ts), on the host of its runner address:
 * where peers fetch its results.
 *
 * @since 0.1.0
 * @internal
 */
export const DataPort = Rpc.make("DataPort", { success: Schema.Number })
/** @since 0.1.0 @internal */
export const Release = Rpc.make("Release", { payload: { compute: Schema.Number, keys: Schema.Array(Schema.String) } })

/**
 * Where a worker keeps the result `key` of compute `compute` (its store and its data
 * plane): results of different computes never meet, so a compute's release that arrives
 * late cannot drop the same key made by the next compute.
 *
 * @since 0.1.0
 * @internal
 */
export const storeKey = (compute: number, key: string): string => `${compute}:${key}`
/** @since 0.1.0 @internal */
export const Cancel = Rpc.make("Cancel", { payload: { compute: Schema.Number } })
/**
 * A clock sample and liveness, both ways: the worker answers its clock; the ping says
 * which driver sent it (its literals' key prefix, literals.ts) and how often that driver
 * pings, so a worker can drop the literals of a driver that stopped pinging (it died).
 *
 * @since 0.1.0
 * @internal
 */
export const Time = Rpc.make("Time", { payload: { driver: Schema.String, every: Schema.Number }, success: Schema.Number })

/**
 * A driver's cluster closing: the worker drops everything of that driver (its literals,
 * every result of its computes). A driver that dies without it stops pinging (`Time`),
 * which the worker notices too.
 *
 * @since 0.1.0
 * @internal
 */
export const Bye = Rpc.make("Bye", { payload: { driver: Schema.String } })

/** @since 0.1.0 @internal */
export const Info = Rpc.make("Info", {
  success: Schema.Struct({ host: Schema.String, threads: Schema.Number, pid: Schema.Number })
})

/**
 * A worker's counters since it started: bytes it sent to peers and received from them
 * (encoded sizes), tasks it completed, batches running now; and what it holds now:
 * results (its own and fetched copies, of every compute) and the drivers' literals.
 *
 * @since 0.1.0
 * @internal
 */
export const Stats = Rpc.make("Stats", {
  success: Schema.Struct({
    sent: Schema.Number,
    received: Schema.Number,
    tasks: Schema.Number,
    running: Schema.Number,
    held: Schema.Number,
    literals: Schema.Number,
    /** bytes of the results held, and of the literals */
    heldBytes: Schema.Number,
    literalBytes: Schema.Number,
    /** results refused by `maxHeldBytes` so far */
    refused: Schema.Number,
    /** the worker's `--max-held-bytes`, when it has one */
    maxHeldBytes: Schema.optional(Schema.Number)
  })
})

/**
 * Starts and closes worker plugins (`WorkerPlugin`): the blob is a {@link PluginsRequest};
 * answers when every started plugin is ready and every closed one has flushed: null, or
 * why a plugin did not start.
 *
 * @since 0.1.0
 * @internal
 */
export const Plugins = Rpc.make("Plugins", { payload: { blob: Blob }, success: Schema.NullOr(Schema.String) })

/**
 * The worker entity. Entity id = worker name = shard group.
 *
 * @since 0.1.0
 * @internal
 */
export const TesseraWorker = Entity.make("TesseraWorker", [Run, Get, DataPort, Release, Cancel, Time, Bye, Info, Stats, Plugins])
  .annotate(ClusterSchema.ShardGroup, (id: string) => id)

const PersistFail = Schema.String

/**
 * The scheduler-hosted runner registry (RunnerStorage's encoded interface).
 *
 * @since 0.1.0
 * @internal
 */
export const RunnerStorageRpcs = RpcGroup.make(
  Rpc.make("getRunners", { success: Schema.Array(Schema.Tuple([Schema.String, Schema.Boolean])), error: PersistFail }),
  Rpc.make("register", {
    payload: { address: Schema.String, runner: Schema.String, healthy: Schema.Boolean },
    success: Schema.Number,
    error: PersistFail
  }),
  Rpc.make("unregister", { payload: { address: Schema.String }, error: PersistFail }),
  Rpc.make("setRunnerHealth", { payload: { address: Schema.String, healthy: Schema.Boolean }, error: PersistFail }),
  Rpc.make("acquire", {
    payload: { address: Schema.String, shardIds: Schema.Array(Schema.String) },
    success: Schema.Array(Schema.String),
    error: PersistFail
  }),
  Rpc.make("refresh", {
    payload: { address: Schema.String, shardIds: Schema.Array(Schema.String) },
    success: Schema.Array(Schema.String),
    error: PersistFail
  }),
  Rpc.make("release", { payload: { address: Schema.String, shardId: Schema.String }, error: PersistFail }),
  Rpc.make("releaseAll", { payload: { address: Schema.String }, error: PersistFail }),
  /** a worker says who it is before it registers (the registry logs joins and leaves with it) */
  Rpc.make("announce", {
    payload: { address: Schema.String, pid: Schema.Number, host: Schema.String, threads: Schema.Number },
    error: PersistFail
  }),
  /** a worker says what it holds now, when that changed (the registry logs it) */
  Rpc.make("held", {
    payload: { address: Schema.String, bytes: Schema.Number, results: Schema.Number },
    error: PersistFail
  }),
  /**
   * a driver asks whether the scheduler serves a dashboard (`tessera scheduler
   * --dashboard`), and its clock (epoch seconds) to put the records it forwards on it
   */
  Rpc.make("dashboard", { success: Schema.Struct({ on: Schema.Boolean, clock: Schema.Number }), error: PersistFail }),
  /** a driver's records of one tick for the scheduler's dashboard (feed.ts `FeedBatch`, encoded) */
  Rpc.make("feed", { payload: { blob: Blob }, error: PersistFail })
)

/**
 * The trace row (`thread_id`) of thread `row` of a cluster worker process, as its worker
 * plugins write it: `worker-{host}-{HOST:PORT}-pid{pid}-{row}`, carrying the process
 * and the address it is reached at, so two worker processes on one host read apart. Rows
 * recorded in the driver's process (hooks without a worker plugin) stay
 * `worker-{host}-{row}` (`EngineEvents.threadId`). Either ends in `-{row}`.
 *
 * @since 0.1.0
 * @internal
 */
export const workerRow = (host: string, address: string, pid: number, row: number): string => `worker-${host}-${address}-pid${pid}-${row}`

/**
 * One task as the scheduler sends it: its key, kernel and arguments (task refs left in
 * place; the worker resolves them from its store or its peers).
 *
 * @since 0.1.0
 * @internal
 */
export interface WireTask {
  readonly key: string
  readonly module: string
  readonly name: string
  readonly args: ReadonlyArray<unknown>
  /** what the task declared its kernel returns (`TaskSpec.output`): checked on the worker's thread */
  readonly output?: TaskOutput
  /** the task's stage (named by the worker's typed errors) */
  readonly stage?: string
}

/**
 * A batch: the compute it belongs to, whether TaskRecords are wanted, the tasks, and for
 * every input a worker may lack, the workers that hold it.
 *
 * @since 0.1.0
 * @internal
 */
export interface RunRequest {
  readonly compute: number
  /**
   * the driver that sent it (its literals' key prefix, as in `Time`): the worker drops
   * the results of a driver's computes when that driver says `Bye` or stops pinging
   */
  readonly driver?: string
  readonly profile: boolean
  readonly tasks: ReadonlyArray<WireTask>
  readonly inputs: ReadonlyArray<readonly [key: string, holders: ReadonlyArray<string>]>
  /** large literal arguments this worker does not hold yet (literals.ts), by key */
  readonly literals?: ReadonlyArray<readonly [key: string, value: unknown]>
  /** literal keys the worker may drop (the driver's arrays were collected or changed) */
  readonly drop?: ReadonlyArray<string>
  /** results of this compute the worker drops before the batch (as `Release` does) */
  readonly release?: ReadonlyArray<string>
  /** keys of this batch the driver asked for: their values come back in the reply */
  readonly want?: ReadonlyArray<string>
  /** present when worker plugins record this compute (see {@link RunTrace}) */
  readonly trace?: RunTrace
  /**
   * profiled batches: false when the reply need not carry the task records
   * (`RunReply.recs`): worker plugins record the compute and the driver has no callback
   * of its own that reads them
   */
  readonly recs?: boolean
}

/**
 * What a worker needs to record a batch for its plugins as the scheduler would: which
 * plugins, its trace rows, its clock offset, and each task's execution key,
 * dependencies, dependents and stage (the run's lineage lives in the driver).
 *
 * @since 0.1.0
 * @internal
 */
export interface RunTrace {
  /** ids of the plugins (already started on this worker) recording this compute */
  readonly plugins: ReadonlyArray<string>
  /** the worker's index: its rows are `worker-{host}-{index × 16 + thread}` */
  readonly index: number
  /** worker clock minus scheduler clock, seconds */
  readonly offset: number
  /** per task of the batch, in order: execution key, dependencies, dependents, stage ("" none) */
  readonly tasks: ReadonlyArray<readonly [key: string, dependencies: ReadonlyArray<string>, dependents: ReadonlyArray<string>, stage: string]>
  /** execution keys of the inputs the worker may fetch */
  readonly inputs: ReadonlyArray<readonly [key: string, exec: string]>
  /** the first trace row of each holder of those inputs (a Transfer's peer) */
  readonly rows: ReadonlyArray<readonly [worker: string, row: string]>
  /** pids of the other worker processes on this worker's host */
  readonly peers: ReadonlyArray<number>
}

/**
 * Plugins to start (with where each runs) and plugin ids to close.
 *
 * @since 0.1.0
 * @internal
 */
export interface PluginsRequest {
  readonly start: ReadonlyArray<{
    readonly plugin: { readonly id: string; readonly module: string; readonly name: string; readonly options: unknown }
    readonly monitor: boolean
    readonly truncate: boolean
  }>
  readonly close: ReadonlyArray<string>
  /** the worker's clock offset as the scheduler measured it (worker minus scheduler, seconds) */
  readonly offset: number
}

/**
 * One peer fetch, on the receiving worker's clock (epoch seconds).
 *
 * @since 0.1.0
 * @internal
 */
export interface WireTransfer {
  readonly keys: ReadonlyArray<string>
  readonly bytes: number
  /** the worker that sent the data */
  readonly peer: string
  readonly start: number
  readonly stop: number
  /** seconds the sender spent serialising, and the receiver deserialising */
  readonly serialize: number
  readonly deserialize: number
}

/**
 * What a worker answers to a batch: for each task that completed (a prefix of the
 * batch) its result's description and, when profiled, its timing row (taskTiming.ts);
 * the first failure; the fetches.
 *
 * @since 0.1.0
 * @internal
 */
export interface RunReply {
  readonly done: ReadonlyArray<{
    readonly key: string
    readonly nbytes: number
    readonly chunks: number
    readonly shape: ReadonlyArray<number>
    readonly dtype: string
    readonly type: string
    readonly thread: number
  }>
  /**
   * profiled batches: one timing row (taskTiming.ts, `TIMING_FLOATS` floats) per entry of
   * `done`, in order, on the worker's clock (the scheduler moves it by the offset it
   * measured; NaN `gatherStart`: no record). One typed
   * array, which the wire carries as raw bytes, not an array of numbers per task (whose
   * decoding cost the driver measurable CPU: docs/engine.md).
   */
  readonly recs?: Float64Array
  readonly error:
    | {
      readonly key: string
      readonly tag:
        | "KernelFailed"
        | "KernelNotFound"
        | "BadOutput"
        | "ArgumentNotSendable"
        | "HeldBytesExceeded"
        | "ModuleRefused"
        | "WorkerMemoryExceeded"
        | "Interrupted"
        | "InputLost"
        | "LiteralsMissing"
      readonly message: string
      readonly stack: string
      readonly module: string
      readonly name: string
      /** InputLost: the keys no holder could give; LiteralsMissing: the literal keys this worker lacks */
      readonly lost: ReadonlyArray<string>
      /**
       * the worker's typed reason's own fields (KernelFailed, BadOutput,
       * ArgumentNotSendable, HeldBytesExceeded): the scheduler rebuilds the same error
       */
      readonly fields?: Record<string, unknown>
      /**
       * the failed task's record (profiled batches, its kernel having started): its
       * timing row (taskTiming.ts, on the worker's clock), its thread and its
       * traceback, so the driver records it as erred
       */
      readonly erred?: { readonly rec: Float64Array; readonly thread: number; readonly error: string; readonly traceback: string }
    }
    | null
  readonly transfers: ReadonlyArray<WireTransfer>
  /** seconds the batch ran on the worker's pool (its tasks' cost, without the trip) */
  readonly seconds: number
  /** the values of the batch's `want` keys that completed (the driver's outputs) */
  readonly values?: Record<string, unknown>
}

/**
 * A value without shared memory (v8's serializer refuses SharedArrayBuffers): typed
 * arrays over shared memory are copied; arrays and object literals are walked and copied
 * only where something inside them was (copy on write: a batch's task list, its lineage
 * and most arguments hold no shared memory, and are not copied).
 */
const unshare = (v: unknown): unknown =>
  mapDeep(v, 32, (o) => {
    if (ArrayBuffer.isView(o)) return o.buffer instanceof SharedArrayBuffer ? (o as unknown as { slice: () => unknown }).slice() : o
    if (o instanceof SharedArrayBuffer) return new Uint8Array(o).slice().buffer
    return KEEP
  })

/**
 * Encodes a value for the wire (typed arrays as raw bytes).
 *
 * @since 0.1.0
 * @internal
 */
export const encodeValue = (v: unknown): Uint8Array => serialize(unshare(v))

/**
 * Decodes {@link encodeValue}'s bytes.
 *
 * @since 0.1.0
 * @internal
 */
export const decodeValue = <A = unknown>(b: Uint8Array): A => deserialize(b) as A

/**
 * `host:port` of an address.
 *
 * @since 0.1.0
 * @internal
 */
export const parseAddress = (
  s: string,
  what: string,
  options: { readonly port0?: boolean } = {}
): { readonly host: string; readonly port: number } => {
  const m = /^(.*):(\d+)$/.exec(s.trim())
  const port = m === null ? NaN : Number(m[2])
  if (m === null || m[1] === "" || !Number.isInteger(port) || port < (options.port0 === true ? 0 : 1) || port > 65535) {
    throw new Error(`${what}: expected HOST:PORT (e.g. 127.0.0.1:8786), got ${JSON.stringify(s)}`)
  }
  return { host: m[1]!, port }
}
