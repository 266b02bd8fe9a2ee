/**
 * The tables people query with SQL (`tessera sql`, `Query.sql`): their stable names,
 * their columns as TypeScript types (Arrow types, as a query returns them), and the
 * DuckDB statements that build them from the loaded trace tables. docs/queries.md
 * describes every column.
 *
 * Units: seconds for times (epoch seconds for `start`, `stop`, `timestamp`), bytes for
 * sizes. Strings are VARCHAR, counts INTEGER, everything else DOUBLE; NULL where the
 * trace has no value.
 *
 * `stage`, `type`, `dtype`, `shape`, the phase durations (`gather`, `compute`,
 * `transfer`), `peak_memory`, `io_bytes` and `cores` of `tasks` come from Tessera's
 * Compute args (Load.ts); DASF's traces have none of them but shape, dtype and type
 * (NULL). `transfers` (Tessera's `Transfer` events) and `samples` (the statistical
 * profiler's sidecar) are filled by `internal/duckExtra.ts` with a second pass over the
 * files, only where the run has them; they exist, empty, for every other run.
 *
 * @since 0.1.0
 */
import type { Float64, Int32, Utf8 } from "apache-arrow"

/**
 * `tasks`: one row per execution of a task (`Compute` event), in load order.
 *
 * @since 0.1.0
 * @category models
 */
export type TasksView = {
  /** row number, 0-based: joins `dependencies.task_id` */
  readonly task_id: Int32
  readonly key: Utf8
  /** `args.name`, else dask's `key_split` of the key */
  readonly function: Utf8
  /** the pipeline stage (`args.stage`; NULL where the task has none, e.g. DASF traces) */
  readonly stage: Utf8
  readonly host: Utf8
  readonly worker: Utf8
  readonly state: Utf8
  /** epoch seconds: `stop - duration` */
  readonly start: Float64
  /** epoch seconds: the event's timestamp (the task's end) */
  readonly stop: Float64
  readonly duration: Float64
  /** thread CPU seconds (Tessera traces) */
  readonly cpu_time: Float64
  /** sum of the output sizes of the task's dependencies (latest execution of each; 0 when absent) */
  readonly bytes_in: Float64
  /** output size (`args.size`) */
  readonly bytes_out: Float64
  readonly n_dependencies: Int32
  /** output shape as text: dimensions joined by "x" ("1000x3"), "" for a scalar */
  readonly shape: Utf8
  /** output dtype */
  readonly dtype: Utf8
  /** seconds spent gathering inputs (`startstops`; NULL where absent) */
  readonly gather: Float64
  /** seconds computing (NULL where absent) */
  readonly compute: Float64
  /** seconds storing the result (NULL where absent) */
  readonly transfer: Float64
  /** result type (`Chunk`, `Float64Array`, `number`, ...) */
  readonly type: Utf8
  /** bytes: the worker's heap + external high-water mark while the task ran (Tessera traces) */
  readonly peak_memory: Float64
  /** bytes the task's kernel read from files (Tessera traces) */
  readonly io_bytes: Float64
  /** cpu_time / duration */
  readonly cores: Float64
}

/**
 * `dependencies`: one row per edge, a task reading the output of another key.
 *
 * @since 0.1.0
 * @category models
 */
export type DependenciesView = {
  readonly task_id: Int32
  readonly key: Utf8
  readonly function: Utf8
  readonly host: Utf8
  readonly worker: Utf8
  /** the key read */
  readonly dependency: Utf8
  /** the dependency's latest execution, NULL when it is not in the trace */
  readonly dependency_task_id: Int32
  readonly dependency_function: Utf8
  readonly dependency_host: Utf8
  readonly dependency_worker: Utf8
  /** the dependency's output size (0 when unknown) */
  readonly bytes: Float64
}

/**
 * `memory`: one row per `Managed Memory` event.
 *
 * @since 0.1.0
 * @category models
 */
export type MemoryView = {
  readonly timestamp: Float64
  readonly host: Utf8
  readonly worker: Utf8
  readonly key: Utf8
  readonly state: Utf8
  /** bytes held by the worker after the event */
  readonly bytes: Float64
  /** chunks held by the worker after the event */
  readonly chunks: Float64
}

/**
 * `resources`: one row per `Resource Usage` sample (DASF's ResourceMonitor).
 *
 * @since 0.1.0
 * @category models
 */
export type ResourcesView = {
  readonly timestamp: Float64
  readonly host: Utf8
  /** percent */
  readonly cpu: Float64
  /** bytes */
  readonly memory: Float64
  /** percent, NULL without a GPU */
  readonly gpu_utilization: Float64
  /** bytes, NULL without a GPU */
  readonly gpu_memory_used: Float64
  readonly net_read_bps: Float64
  readonly net_write_bps: Float64
  readonly disk_read_bps: Float64
  readonly disk_write_bps: Float64
  readonly num_fds: Float64
  readonly time: Float64
}

/**
 * `stages`: one row per stage; the tasks without a stage form one row, `(no stage)`
 * (as `tessera analyze -a stage_summary`).
 *
 * @since 0.1.0
 * @category models
 */
export type StagesView = {
  readonly stage: Utf8
  readonly tasks: Int32
  readonly workers: Int32
  readonly start: Float64
  readonly stop: Float64
  /** stop - start */
  readonly wall: Float64
  /** sum of task durations */
  readonly busy: Float64
  readonly mean: Float64
  readonly max: Float64
  readonly bytes_in: Float64
  readonly bytes_out: Float64
}

/**
 * `workers`: one row per (host, worker) that ran tasks.
 *
 * @since 0.1.0
 * @category models
 */
export type WorkersView = {
  readonly host: Utf8
  readonly worker: Utf8
  readonly tasks: Int32
  readonly first_start: Float64
  readonly last_stop: Float64
  /** sum of task durations */
  readonly busy: Float64
  /** the run's span (first task start to last task stop) minus busy */
  readonly idle: Float64
  /** busy / span x 100 */
  readonly utilization: Float64
}

/**
 * `transfers`: one row per `Transfer` event (data moved for tasks: a cluster worker's
 * fetch from a peer, or a GPU worker's copy to or from its device); empty when the run
 * wrote none.
 *
 * @since 0.1.0
 * @category models
 */
export type TransfersView = {
  /** the receiving worker's host */
  readonly host: Utf8
  /** the receiving worker (for a device copy: the GPU worker) */
  readonly worker: Utf8
  /** the keys whose results moved: a DuckDB `VARCHAR[]` (`unnest(keys)`); a result carries it as JSON text */
  readonly keys: Utf8
  /** `len(keys)` */
  readonly n_keys: Int32
  /** bytes on the wire (encoded) */
  readonly bytes: Float64
  /** epoch seconds */
  readonly start: Float64
  readonly stop: Float64
  /** `stop - start` */
  readonly duration: Float64
  /** the sending worker of a peer fetch; NULL for a device copy */
  readonly peer: Utf8
  /** `host-to-device` or `device-to-host`; NULL for a peer fetch */
  readonly direction: Utf8
  /** seconds the sender spent serialising (peer fetches; else NULL) */
  readonly serialize: Float64
  /** seconds the receiver spent deserialising (peer fetches; else NULL) */
  readonly deserialize: Float64
}

/**
 * `samples`: one row per statistical profiler sample (the sidecar
 * `NAME-StatisticalProfiler-HOST.msgpack` among the databases); empty without one.
 *
 * @since 0.1.0
 * @category models
 */
export type SamplesView = {
  /** epoch seconds */
  readonly time: Float64
  readonly host: Utf8
  /** the sampled thread: `worker-{host}-{i}` or `driver` */
  readonly thread: Utf8
  /** the running task's key; NULL between tasks */
  readonly key: Utf8
  /** the task's function; `idle` on a worker between tasks, `driver` on the main thread */
  readonly function: Utf8
  /** the task's stage; NULL when none */
  readonly stage: Utf8
  /** the configured sampling interval, seconds (V8 samples more often than that, or less on a busy machine: sum `seconds`, not `interval`) */
  readonly interval: Float64
  /** seconds of thread time the sample stands for: V8's real interval before it, within the tasks of its function on its thread (issue 31 item 1) */
  readonly seconds: Float64
  /** the innermost frame's function name (`(anonymous)` when it has none); NULL for an empty stack */
  readonly frame_function: Utf8
  /** the innermost frame's script URL; NULL when none */
  readonly frame_url: Utf8
  /** the innermost frame's line, 1-based; NULL when unknown */
  readonly frame_line: Int32
  /** frames on the stack (0: empty) */
  readonly depth: Int32
}

/**
 * Every queryable table by name.
 *
 * @since 0.1.0
 * @category models
 */
export interface Views {
  readonly tasks: TasksView
  readonly dependencies: DependenciesView
  readonly memory: MemoryView
  readonly resources: ResourcesView
  readonly stages: StagesView
  readonly workers: WorkersView
  readonly transfers: TransfersView
  readonly samples: SamplesView
}

/**
 * A table's name.
 *
 * @since 0.1.0
 * @category models
 */
export type ViewName = keyof Views

/**
 * The queryable tables' names, in the order docs/queries.md describes them.
 *
 * @since 0.1.0
 * @category models
 */
export const viewNames: ReadonlyArray<ViewName> = ["tasks", "dependencies", "memory", "resources", "stages", "workers", "transfers", "samples"]

/**
 * DuckDB statements creating the tables from what `internal/duckLoad.ts` appends: views
 * `_tasks`, `_memory`, `_resources` (the loaded columns, strings resolved, `key_id` the
 * key's dictionary code), `_edges (task_id, dependency_id)` and `_keys (id, s)`. Only
 * `_t` (behind `tasks`: every query reads it, and `bytes_in` needs a join) is
 * materialised; the rest are views, computed when queried. Nothing is sorted: `task_id`
 * keeps the load order as a value.
 *
 * @since 0.1.0
 * @category constructors
 */
export const viewDefinitions: ReadonlyArray<string> = [
  `CREATE TABLE _t AS
WITH latest AS (SELECT key_id, arg_max(coalesce(size, 0), "end") AS bytes FROM _tasks GROUP BY key_id),
inputs AS (
  SELECT e.task_id, sum(coalesce(l.bytes, 0)) AS bytes_in, count(*) AS n
  FROM _edges e LEFT JOIN latest l ON l.key_id = e.dependency_id GROUP BY e.task_id
)
SELECT t.task_id, t.key_id, t.key, t.function, t.stage, t.host, t.worker, t.state,
  t.start, t."end" AS stop, t.duration, t.cpu_time, coalesce(i.bytes_in, 0) AS bytes_in, t.size AS bytes_out,
  coalesce(i.n, 0)::INTEGER AS n_dependencies, t.shape, t.dtype,
  t.gather_end - t.gather_start AS gather, t.compute_end - t.compute_start AS compute,
  t.transfer_end - t.transfer_start AS transfer, t.type, t.peak_memory, t.io_bytes, t.cores
FROM _tasks t LEFT JOIN inputs i ON i.task_id = t.task_id`,
  `CREATE VIEW tasks AS SELECT * EXCLUDE (key_id) FROM _t`,
  `CREATE VIEW dependencies AS
WITH latest AS (SELECT key_id, arg_max(task_id, stop) AS task_id FROM _t GROUP BY key_id)
SELECT e.task_id, t.key, t.function, t.host, t.worker, k.s AS dependency,
  p.task_id AS dependency_task_id, p.function AS dependency_function, p.host AS dependency_host,
  p.worker AS dependency_worker, coalesce(p.bytes_out, 0) AS bytes
FROM _edges e JOIN _t t ON t.task_id = e.task_id LEFT JOIN _keys k ON k.id = e.dependency_id
LEFT JOIN latest l ON l.key_id = e.dependency_id LEFT JOIN _t p ON p.task_id = l.task_id`,
  `CREATE VIEW memory AS
SELECT timestamp, host, worker, key, state, size AS bytes, tasks AS chunks FROM _memory`,
  `CREATE VIEW resources AS
SELECT timestamp, host, cpu, memory, gpu_utilization, gpu_memory_used,
  "host_net_io.read_bps" AS net_read_bps, "host_net_io.write_bps" AS net_write_bps,
  "host_disk_io.read_bps" AS disk_read_bps, "host_disk_io.write_bps" AS disk_write_bps, num_fds, time
FROM _resources`,
  `CREATE VIEW stages AS
SELECT coalesce(stage, '(no stage)') AS stage, count(*)::INTEGER AS tasks, count(DISTINCT worker)::INTEGER AS workers,
  min(start) AS start, max(stop) AS stop, max(stop) - min(start) AS wall, sum(duration) AS busy,
  avg(duration) AS mean, max(duration) AS max, sum(bytes_in) AS bytes_in, sum(coalesce(bytes_out, 0)) AS bytes_out
FROM tasks GROUP BY 1`,
  `CREATE VIEW workers AS
WITH run AS (SELECT min(start) AS t0, max(stop) AS t1 FROM tasks)
SELECT host, worker, count(*)::INTEGER AS tasks, min(start) AS first_start, max(stop) AS last_stop,
  sum(duration) AS busy, (run.t1 - run.t0) - sum(duration) AS idle,
  100 * sum(duration) / nullif(run.t1 - run.t0, 0) AS utilization
FROM tasks, run GROUP BY host, worker, run.t0, run.t1`
]
