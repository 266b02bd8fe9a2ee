/**
 * Dask's distributed diagnostics of data movement, over Load.ts's `transfers` table
 * (`Transfer` events: a cluster worker's fetch from a peer, a GPU worker's copy between
 * host and device memory) and the `tasks` table:
 *
 * - `transferBandwidth`: bytes, transfers, total time and MB/s by worker pair (the
 *   sending peer and the receiving worker) and direction (`peer`, `host-to-device`,
 *   `device-to-host`; a device copy's pair is the GPU worker and `host`).
 * - `transferTypes`: the same by the data type of the keys moved (the `type` and
 *   `dtype` of the task that made each key; `(unknown)` for a key no task made).
 * - `transferFunctions`: transfer time per function of the task that received the data.
 * - `transferShare`: compute vs transfer time per worker row and for the run.
 *
 * Rules (docs/analysis.md, "Transfers"):
 *
 * - A transfer of several keys is split among them by the sizes of the tasks that made
 *   them (their `size`), evenly when a size is missing or all are 0: bytes and time.
 * - The **receiving task** of a key moved to a worker is the task that lists the key as
 *   a dependency, ran on the receiving worker and ended at or after the transfer's stop,
 *   the earliest such. For a peer fetch "the receiving worker" is its process: the rows
 *   `worker-{host}-{i}` with `i` from the transfer's row to the next multiple of 16 (a
 *   cluster worker's threads); for a host-to-device copy it is the GPU worker's row, and
 *   the task that made the key is a candidate too (a GPU task's own arguments are
 *   uploaded under its key). For a device-to-host copy (a result read back) it is the
 *   task whose result moved.
 *   A key with none goes to `(none)`.
 * - MB/s is bytes / 1e6 / the sum of the transfers' durations (null when that is 0):
 *   the rate while transferring, not over the run (overlapping transfers add up).
 *
 * A trace without transfers (DASF's, one process without GPU workers) gives tables with
 * no rows, except `transferShare`, whose rows then show 0 transfer time (an empty trace:
 * none).
 *
 * Leaves out: transfers a task's own `transfer` phase covers (that is DASF's
 * `startstops`, in `tasks`), and network time outside Tessera's fetches.
 *
 * @since 0.1.0
 */
import type { Table } from "apache-arrow"
import { buildTable } from "./internal/access.ts"
import { str, type Tables, taskView } from "./internal/taskView.ts"

/**
 * One transfer: the receiving worker's row, the peer it came from (peer fetches), its
 * direction (device copies), the keys moved, bytes, and start/stop (epoch seconds). The
 * report's builders take the same (`report/ReportData.ts` `TransferInput`).
 *
 * @since 0.1.0
 * @category models
 */
export interface TransferRow {
  readonly worker: string
  readonly peer: string | null
  readonly direction: string | null
  readonly keys: ReadonlyArray<string>
  readonly bytes: number
  readonly start: number
  readonly stop: number
}

/** One transfer, read from the table. */
interface Row extends TransferRow {
  readonly duration: number
  /** NaN where absent (device copies) */
  readonly serialize: number
  readonly deserialize: number
}

const numOr0 = (x: unknown): number => (typeof x === "number" && Number.isFinite(x) ? x : 0)
const numOrNaN = (x: unknown): number => (typeof x === "number" && Number.isFinite(x) ? x : NaN)
/** a sum that stays NaN (null in the table) until a value is added */
const addKnown = (sum: number, x: number) => (x !== x ? sum : sum !== sum ? x : sum + x)

const rowsOf = (t: Table | undefined): Array<Row> => {
  if (t === undefined || t.numRows === 0) return []
  const out: Array<Row> = []
  for (const r of t) {
    const k = r.keys as { toArray(): Array<string | null> } | null
    out.push({
      worker: (r.worker as string | null) ?? "",
      peer: (r.peer as string | null) ?? null,
      direction: (r.direction as string | null) ?? null,
      keys: k === null ? [] : k.toArray().filter((x): x is string => x !== null),
      bytes: numOr0(r.bytes),
      start: numOr0(r.start),
      stop: numOr0(r.stop),
      duration: numOr0(r.duration),
      serialize: numOrNaN(r.serialize),
      deserialize: numOrNaN(r.deserialize)
    })
  }
  return out
}

/**
 * A transfer's direction as the tables show it: `peer` for a peer fetch, else its
 * `direction` (`host-to-device` | `device-to-host`).
 *
 * @since 0.1.0
 * @category analysis
 */
export const directionOf = (peer: string | null, direction: string | null): string =>
  direction ?? (peer !== null ? "peer" : "unknown")

/** `worker-{host}-{i}` → [prefix, i], else undefined. */
const rowIndex = (w: string): readonly [string, number] | undefined => {
  const m = /^(.*-)(\d+)$/.exec(w)
  return m === null ? undefined : [m[1]!, Number(m[2])]
}

/** Everything the per-key rules need from the tasks, built once per analysis call. */
const taskIndex = (tables: Tables) => {
  const v = taskView(tables.tasks)
  // last row of each key (a recomputed key: its latest run)
  const rowOfKey = new Map<string, number>()
  for (let i = 0; i < v.n; i++) {
    const k = str(v.key, v.key.codes[i])
    if (k !== null) rowOfKey.set(k, i)
  }
  // tasks that take each key
  const takers = new Map<string, Array<number>>()
  for (let i = 0; i < v.n; i++) {
    for (let d = v.depOffsets[i]; d < v.depOffsets[i + 1]; d++) {
      const c = v.deps[d]
      if (c < 0) continue
      const k = v.key.at(c)
      let l = takers.get(k)
      if (l === undefined) takers.set(k, l = [])
      l.push(i)
    }
  }
  const type = tables.tasks.getChild("type")
  const dtype = tables.tasks.getChild("dtype")
  const workerOf = (i: number) => str(v.worker, v.worker.codes[i]) ?? ""
  /** the key's share of each transfer field: by the makers' sizes, evenly without them */
  const shares = (keys: ReadonlyArray<string>): Array<number> => {
    const sizes = keys.map((k) => {
      const i = rowOfKey.get(k)
      return i === undefined ? NaN : v.size[i]
    })
    const total = sizes.reduce((a, b) => a + b, 0)
    return total > 0 && sizes.every((s) => s >= 0) ? sizes.map((s) => s / total) : keys.map(() => 1 / keys.length)
  }
  const onReceiver = (t: Row, i: number): boolean => {
    const w = workerOf(i)
    if (t.peer === null) return w === t.worker
    const a = rowIndex(t.worker)
    const b = rowIndex(w)
    return a !== undefined && b !== undefined && a[0] === b[0] && b[1] >= a[1] && b[1] < a[1] - (a[1] % 16) + 16
  }
  /** the receiving task's row (see the module header), -1 when none */
  const receiver = (t: Row, key: string): number => {
    if (t.direction === "device-to-host") return rowOfKey.get(key) ?? -1
    let best = -1
    const own = t.direction === "host-to-device" ? rowOfKey.get(key) : undefined
    for (const i of own === undefined ? takers.get(key) ?? [] : [own, ...takers.get(key) ?? []]) {
      if (v.end[i] + 1e-9 < t.stop || !onReceiver(t, i)) continue
      if (best < 0 || v.end[i] < v.end[best]) best = i
    }
    return best
  }
  const typeOf = (key: string): string => {
    const i = rowOfKey.get(key)
    const ty = i === undefined ? null : (type?.get(i) as string | null | undefined) ?? null
    return ty ?? "(unknown)"
  }
  const dtypeOf = (key: string): string => {
    const i = rowOfKey.get(key)
    return i === undefined ? "" : ((dtype?.get(i) as string | null | undefined) ?? "")
  }
  return { v, shares, receiver, typeOf, dtypeOf, workerOf }
}

/** Group accumulator: transfers (distinct events), keys, bytes, seconds. */
interface Acc {
  transfers: number
  keys: number
  bytes: number
  time: number
  last: number
}

const acc = (): Acc => ({ transfers: 0, keys: 0, bytes: 0, time: 0, last: -1 })

const add = (a: Acc, event: number, keys: number, bytes: number, time: number) => {
  if (a.last !== event) (a.transfers++, a.last = event)
  a.keys += keys
  a.bytes += bytes
  a.time += time
}

const rate = (bytes: number, time: number) => (time > 0 ? bytes / 1e6 / time : NaN)

const byBytes = <T extends { readonly acc: Acc; readonly label: string }>(xs: Array<T>) =>
  xs.sort((a, b) => b.acc.bytes - a.acc.bytes || b.acc.time - a.acc.time || (a.label < b.label ? -1 : a.label > b.label ? 1 : 0))

/**
 * From, To, Direction, Transfers, Bytes, Time (s), MB/s, Serialize (s), Deserialize (s):
 * one row per sending and receiving worker and direction, most bytes first. A device
 * copy's other end is `host` (From for host-to-device, To for device-to-host); its
 * Serialize / Deserialize are null (a peer fetch's sides only).
 *
 * @since 0.1.0
 * @category analysis
 */
export const transferBandwidth = (tables: Tables): Table => {
  const groups = new Map<string, { label: string; from: string; to: string; dir: string; acc: Acc; ser: number; deser: number }>()
  rowsOf(tables.transfers).forEach((t, e) => {
    const dir = directionOf(t.peer, t.direction)
    const from = t.peer ?? (dir === "device-to-host" ? t.worker : "host")
    const to = dir === "device-to-host" ? "host" : t.worker
    const label = `${from}\u0000${to}\u0000${dir}`
    let g = groups.get(label)
    if (g === undefined) groups.set(label, g = { label, from, to, dir, acc: acc(), ser: NaN, deser: NaN })
    add(g.acc, e, t.keys.length, t.bytes, t.duration)
    g.ser = addKnown(g.ser, t.serialize)
    g.deser = addKnown(g.deser, t.deserialize)
  })
  const rows = byBytes([...groups.values()])
  return buildTable({
    "From": { kind: "string", values: rows.map((r) => r.from) },
    "To": { kind: "string", values: rows.map((r) => r.to) },
    "Direction": { kind: "string", values: rows.map((r) => r.dir) },
    "Transfers": { kind: "int", values: rows.map((r) => r.acc.transfers) },
    "Bytes": { kind: "float", values: rows.map((r) => r.acc.bytes) },
    "Time (s)": { kind: "float", values: rows.map((r) => r.acc.time) },
    "MB/s": { kind: "float", values: rows.map((r) => rate(r.acc.bytes, r.acc.time)) },
    "Serialize (s)": { kind: "float", values: rows.map((r) => r.ser) },
    "Deserialize (s)": { kind: "float", values: rows.map((r) => r.deser) }
  })
}

/**
 * Type, Dtype, Direction, Transfers, Keys, Bytes, Time (s), MB/s: bytes and time moved
 * per data type of the keys (their making task's `type` and `dtype`) and direction,
 * most bytes first. A transfer's bytes and time are split among its keys (see the module
 * header); Transfers counts the events that moved at least one key of the type.
 *
 * @since 0.1.0
 * @category analysis
 */
export const transferTypes = (tables: Tables): Table => {
  const rows = rowsOf(tables.transfers)
  if (rows.length === 0) return transferTypesOf([])
  const ix = taskIndex(tables)
  const groups = new Map<string, { label: string; type: string; dtype: string; dir: string; acc: Acc }>()
  rows.forEach((t, e) => {
    const dir = directionOf(t.peer, t.direction)
    const share = ix.shares(t.keys)
    t.keys.forEach((k, j) => {
      const type = ix.typeOf(k)
      const dtype = ix.dtypeOf(k)
      const label = `${type}\u0000${dtype}\u0000${dir}`
      let g = groups.get(label)
      if (g === undefined) groups.set(label, g = { label, type, dtype, dir, acc: acc() })
      add(g.acc, e, 1, t.bytes * share[j]!, t.duration * share[j]!)
    })
  })
  return transferTypesOf(byBytes([...groups.values()]))
}

const transferTypesOf = (rows: ReadonlyArray<{ type: string; dtype: string; dir: string; acc: Acc }>) =>
  buildTable({
    "Type": { kind: "string", values: rows.map((r) => r.type) },
    "Dtype": { kind: "string", values: rows.map((r) => r.dtype) },
    "Direction": { kind: "string", values: rows.map((r) => r.dir) },
    "Transfers": { kind: "int", values: rows.map((r) => r.acc.transfers) },
    "Keys": { kind: "int", values: rows.map((r) => r.acc.keys) },
    "Bytes": { kind: "float", values: rows.map((r) => r.acc.bytes) },
    "Time (s)": { kind: "float", values: rows.map((r) => r.acc.time) },
    "MB/s": { kind: "float", values: rows.map((r) => rate(r.acc.bytes, r.acc.time)) }
  })

/**
 * Function, Transfers, Keys, Bytes, Transfer time (s), Task time (s), Transfer share (%):
 * per function of the receiving task (see the module header; `(none)` for keys without
 * one), the transfers' bytes and time split among their keys, beside the function's
 * total task time; share = transfer / (transfer + task time). Most transfer time first.
 *
 * @since 0.1.0
 * @category analysis
 */
export const transferFunctions = (tables: Tables): Table => {
  const rows = rowsOf(tables.transfers)
  const groups = new Map<string, { label: string; acc: Acc; task: number }>()
  if (rows.length > 0) {
    const ix = taskIndex(tables)
    const { v } = ix
    rows.forEach((t, e) => {
      const share = ix.shares(t.keys)
      t.keys.forEach((k, j) => {
        const i = ix.receiver(t, k)
        const label = i < 0 ? "(none)" : str(v.fn, v.fn.codes[i]) ?? "(none)"
        let g = groups.get(label)
        if (g === undefined) groups.set(label, g = { label, acc: acc(), task: 0 })
        add(g.acc, e, 1, t.bytes * share[j]!, t.duration * share[j]!)
      })
    })
    for (let i = 0; i < v.n; i++) {
      const g = groups.get(str(v.fn, v.fn.codes[i]) ?? "(none)")
      if (g !== undefined && v.duration[i] === v.duration[i]) g.task += v.duration[i]
    }
  }
  const out = [...groups.values()].sort((a, b) => b.acc.time - a.acc.time || b.acc.bytes - a.acc.bytes || (a.label < b.label ? -1 : 1))
  return buildTable({
    "Function": { kind: "string", values: out.map((r) => r.label) },
    "Transfers": { kind: "int", values: out.map((r) => r.acc.transfers) },
    "Keys": { kind: "int", values: out.map((r) => r.acc.keys) },
    "Bytes": { kind: "float", values: out.map((r) => r.acc.bytes) },
    "Transfer time (s)": { kind: "float", values: out.map((r) => r.acc.time) },
    "Task time (s)": { kind: "float", values: out.map((r) => r.task) },
    "Transfer share (%)": { kind: "float", values: out.map((r) => share(r.acc.time, r.task)) }
  })
}

const share = (transfer: number, compute: number) => (transfer + compute > 0 ? (transfer / (transfer + compute)) * 100 : NaN)

/**
 * The label of `transferShare`'s row for the whole run.
 *
 * @since 0.1.0
 * @category constants
 */
export const allWorkers = "(all)"

/**
 * Worker, Tasks, Compute (s), Transfers, Transfer (s), Bytes, Transfer share (%): per
 * worker row (a task's or a transfer's; a cluster worker's transfers are on its first
 * row, a GPU worker's copies on its row) its task time and its transfers' time, and a
 * last `(all)` row for the run (none for an empty trace); share = transfer / (compute +
 * transfer). Rows in worker order.
 *
 * @since 0.1.0
 * @category analysis
 */
export const transferShare = (tables: Tables): Table => {
  const v = taskView(tables.tasks)
  const groups = new Map<string, { tasks: number; compute: number; acc: Acc }>()
  const get = (w: string) => {
    let g = groups.get(w)
    if (g === undefined) groups.set(w, g = { tasks: 0, compute: 0, acc: acc() })
    return g
  }
  for (let i = 0; i < v.n; i++) {
    const g = get(str(v.worker, v.worker.codes[i]) ?? "")
    g.tasks++
    if (v.duration[i] === v.duration[i]) g.compute += v.duration[i]
  }
  rowsOf(tables.transfers).forEach((t, e) => add(get(t.worker).acc, e, t.keys.length, t.bytes, t.duration))
  const names = [...groups.keys()].sort((a, b) => {
    const x = rowIndex(a)
    const y = rowIndex(b)
    return x !== undefined && y !== undefined && x[0] === y[0] ? x[1] - y[1] : a < b ? -1 : a > b ? 1 : 0
  })
  const all = { tasks: 0, compute: 0, acc: acc() }
  for (const n of names) {
    const g = groups.get(n)!
    all.tasks += g.tasks
    all.compute += g.compute
    all.acc.transfers += g.acc.transfers
    all.acc.bytes += g.acc.bytes
    all.acc.time += g.acc.time
  }
  // an empty trace: no rows (not an `(all)` row of zeros)
  const rows = names.length === 0 ? [] : [...names.map((n) => ({ name: n, ...groups.get(n)! })), { name: allWorkers, ...all }]
  return buildTable({
    "Worker": { kind: "string", values: rows.map((r) => r.name) },
    "Tasks": { kind: "int", values: rows.map((r) => r.tasks) },
    "Compute (s)": { kind: "float", values: rows.map((r) => r.compute) },
    "Transfers": { kind: "int", values: rows.map((r) => r.acc.transfers) },
    "Transfer (s)": { kind: "float", values: rows.map((r) => r.acc.time) },
    "Bytes": { kind: "float", values: rows.map((r) => r.acc.bytes) },
    "Transfer share (%)": { kind: "float", values: rows.map((r) => share(r.acc.time, r.compute)) }
  })
}
