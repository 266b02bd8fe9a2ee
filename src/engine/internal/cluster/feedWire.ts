/**
 * The wire form of a driver's feed batch (feed.ts) and its reading on the scheduler: the
 * bytes checked field by field (a driver holds the cluster token, but a malformed batch
 * is refused with a message, never half-applied) into the records the dashboard feeds
 * its live state with.
 *
 * @since 0.1.0
 * @internal
 */
import type { FeedBatch, FeedCompute } from "../../Cluster.ts"
import type { MemoryRecord, TaskRecord, TransferRecord } from "../../EngineEvents.ts"
import { decodeValue } from "./protocol.ts"

/** Floats per task row: gather, compute, transfer spans (6), cpu, nbytes, peakMemory, ioBytes, workerId, erred. */
export const TASK_NUMS = 12
/** Strings per task row: key, name, stage (-1: none), host, thread. */
export const TASK_STRS = 5
/** Floats per memory row: timestamp, bytes, chunks, device (NaN: none), workerId, state. */
export const MEM_NUMS = 6
/** Strings per memory row: host, thread, key. */
export const MEM_STRS = 3
/** Floats per transfer row: bytes, start, stop, serialize, deserialize (NaN: none). */
export const XFER_NUMS = 5
/** Strings per transfer row: host, thread, peer (-1: none); its keys apart (`keys`, `k`). */
export const XFER_STRS = 3
export const MEMORY_STATES: ReadonlyArray<MemoryRecord["state"]> = ["memory", "released", "erred"]

/**
 * The wire form of one batch: strings once each (`strs`), rows as indices and floats.
 *
 * @since 0.1.0
 * @internal
 */
export interface Wire {
  readonly v: 1
  readonly run: string
  readonly driver: string
  readonly dropped: number
  readonly over: boolean
  readonly strs: ReadonlyArray<string>
  readonly computes: ReadonlyArray<FeedCompute>
  readonly running: ReadonlyArray<readonly [id: number, counts: ReadonlyArray<number>]>
  readonly finished: ReadonlyArray<readonly [id: number, failed: boolean]>
  readonly tasks: { readonly s: Int32Array; readonly n: Float64Array }
  readonly memory: { readonly s: Int32Array; readonly n: Float64Array }
  /** `keys`: each row's number of keys; `k`: all rows' keys, in order */
  readonly transfers: { readonly s: Int32Array; readonly n: Float64Array; readonly keys: ReadonlyArray<number>; readonly k: Int32Array }
}

/**
 * Reads a batch a driver sent; a string saying what is wrong with it when it is not one.
 *
 * @since 0.1.0
 * @internal
 */
export const decodeBatch = (blob: Uint8Array): FeedBatch | string => {
  let w: Wire
  try {
    w = decodeValue<Wire>(blob)
  } catch (e) {
    return `not a feed batch (${(e as Error).message})`
  }
  if (typeof w !== "object" || w === null || w.v !== 1) return "not a feed batch of this version"
  if (typeof w.run !== "string" || typeof w.driver !== "string" || typeof w.over !== "boolean" || !isCount(w.dropped)) return "bad header"
  if (!Array.isArray(w.strs) || !w.strs.every((s) => typeof s === "string")) return "bad strings"
  const strs = w.strs
  const rows = (x: { s: Int32Array; n: Float64Array } | undefined, ns: number, nn: number, what: string): number | string => {
    if (x === undefined || !(x.s instanceof Int32Array) || !(x.n instanceof Float64Array)) return `bad ${what}`
    const k = x.s.length / ns
    if (!Number.isInteger(k) || x.n.length !== k * nn) return `bad ${what}: ${x.s.length} strings, ${x.n.length} numbers`
    for (const j of x.s) if (j < -1 || j >= strs.length) return `bad ${what}: string ${j} of ${strs.length}`
    return k
  }
  const nt = rows(w.tasks, TASK_STRS, TASK_NUMS, "tasks")
  const nm = rows(w.memory, MEM_STRS, MEM_NUMS, "memory")
  const nx = rows(w.transfers, XFER_STRS, XFER_NUMS, "transfers")
  for (const n of [nt, nm, nx]) if (typeof n === "string") return n
  const xk = w.transfers.keys
  if (!Array.isArray(xk) || xk.length !== nx || !xk.every(isCount) || !(w.transfers.k instanceof Int32Array)) return "bad transfer keys"
  if (xk.reduce((a, b) => a + b, 0) !== w.transfers.k.length || w.transfers.k.some((j) => j < 0 || j >= strs.length)) return "bad transfer keys"
  if (!Array.isArray(w.computes) || !w.computes.every(isCompute)) return "bad computes"
  if (!Array.isArray(w.running) || !w.running.every((r) => Array.isArray(r) && isCount(r[0]) && Array.isArray(r[1]) && r[1].every(isCount))) return "bad running"
  if (!Array.isArray(w.finished) || !w.finished.every((f) => Array.isArray(f) && isCount(f[0]) && typeof f[1] === "boolean")) return "bad finished"
  const str = (j: number): string => strs[j] ?? ""
  const opt = (j: number): string | undefined => (j < 0 ? undefined : strs[j])
  const num = (v: number): number | undefined => (Number.isNaN(v) ? undefined : v)
  const tasks: Array<TaskRecord> = []
  for (let r = 0; r < (nt as number); r++) {
    const s = w.tasks.s.subarray(r * TASK_STRS, (r + 1) * TASK_STRS)
    const n = w.tasks.n.subarray(r * TASK_NUMS, (r + 1) * TASK_NUMS)
    const stage = opt(s[2]!)
    const peak = num(n[8]!)
    const io = num(n[9]!)
    tasks.push({
      key: str(s[0]!),
      name: str(s[1]!),
      ...(stage !== undefined ? { stage } : {}),
      host: str(s[3]!),
      threadId: str(s[4]!),
      workerId: n[10]!,
      phases: { gather: [n[0]!, n[1]!], compute: [n[2]!, n[3]!], transfer: [n[4]!, n[5]!] },
      cpuTime: n[6]!,
      nbytes: n[7]!,
      ...(peak !== undefined ? { peakMemory: peak } : {}),
      ...(io !== undefined ? { ioBytes: io } : {}),
      shape: [],
      dtype: "",
      type: "",
      dependencies: [],
      dependents: [],
      state: n[11] === 1 ? "erred" : "memory"
    })
  }
  const memory: Array<MemoryRecord> = []
  for (let r = 0; r < (nm as number); r++) {
    const s = w.memory.s.subarray(r * MEM_STRS, (r + 1) * MEM_STRS)
    const n = w.memory.n.subarray(r * MEM_NUMS, (r + 1) * MEM_NUMS)
    const device = num(n[3]!)
    memory.push({
      timestamp: n[0]!,
      host: str(s[0]!),
      threadId: str(s[1]!),
      key: str(s[2]!),
      bytes: n[1]!,
      chunks: n[2]!,
      ...(device !== undefined ? { device } : {}),
      workerId: n[4]!,
      state: MEMORY_STATES[n[5]!] ?? "memory"
    })
  }
  const transfers: Array<TransferRecord> = []
  let at = 0
  for (let r = 0; r < (nx as number); r++) {
    const s = w.transfers.s.subarray(r * XFER_STRS, (r + 1) * XFER_STRS)
    const n = w.transfers.n.subarray(r * XFER_NUMS, (r + 1) * XFER_NUMS)
    const peer = opt(s[2]!)
    const count = xk[r]!
    const keys = Array.from(w.transfers.k.subarray(at, at += count), str)
    const ser = num(n[3]!)
    const de = num(n[4]!)
    transfers.push({
      keys,
      bytes: n[0]!,
      host: str(s[0]!),
      threadId: str(s[1]!),
      ...(peer !== undefined ? { peer } : {}),
      start: n[1]!,
      stop: n[2]!,
      ...(ser !== undefined ? { serialize: ser } : {}),
      ...(de !== undefined ? { deserialize: de } : {})
    })
  }
  return {
    run: w.run,
    driver: w.driver,
    dropped: w.dropped,
    over: w.over,
    computes: w.computes,
    running: w.running.map(([id, counts]) => ({ id, counts })),
    finished: w.finished.map(([id, failed]) => ({ id, failed })),
    tasks,
    memory,
    transfers
  }
}

const isCount = (x: unknown): x is number => typeof x === "number" && Number.isSafeInteger(x) && x >= 0

const isCompute = (c: unknown): c is FeedCompute => {
  if (typeof c !== "object" || c === null) return false
  const { id, groups } = c as FeedCompute
  return isCount(id) && Array.isArray(groups) &&
    groups.every((g) => typeof g === "object" && g !== null && typeof g.name === "string" && (g.stage === undefined || typeof g.stage === "string") && isCount(g.total))
}
