/**
 * Growable typed columns the decoder appends to, one per table column. Strings are
 * stored as `StringPool` ids (-1 = null), numbers as float64 (NaN = null).
 *
 * @since 0.1.0
 */

/**
 * A growable Float64Array.
 *
 * @since 0.1.0
 * @category models
 */
export class F64 {
  data = new Float64Array(1024)
  length = 0
  push(x: number): void {
    if (this.length === this.data.length) this.reserve(this.data.length * 2)
    this.data[this.length++] = x
  }
  view(): Float64Array {
    return this.data.subarray(0, this.length)
  }
  /** Room for `n` rows in all (never shrinks): no copy while it fills up to there. */
  reserve(n: number): void {
    if (n <= this.data.length) return
    const next = new Float64Array(n)
    next.set(this.data.subarray(0, this.length))
    this.data = next
  }
  /** Sets row `i` (at or after the last row); rows skipped in between are NaN. */
  setAt(i: number, x: number): void {
    if (this.length < i) this.padTo(i)
    if (this.length === i) this.push(x)
    else this.data[i] = x
  }
  /** Pads with NaN to `n` rows. */
  padTo(n: number): void {
    if (n <= this.length) return
    if (n > this.data.length) this.reserve(Math.max(n, this.data.length * 2))
    this.data.fill(NaN, this.length, n)
    this.length = n
  }
}

/**
 * A growable Int32Array.
 *
 * @since 0.1.0
 * @category models
 */
export class I32 {
  data = new Int32Array(1024)
  length = 0
  push(x: number): void {
    if (this.length === this.data.length) this.reserve(this.data.length * 2)
    this.data[this.length++] = x
  }
  view(): Int32Array {
    return this.data.subarray(0, this.length)
  }
  /** Room for `n` rows in all (never shrinks): no copy while it fills up to there. */
  reserve(n: number): void {
    if (n <= this.data.length) return
    const next = new Int32Array(n)
    next.set(this.data.subarray(0, this.length))
    this.data = next
  }
  /** Sets row `i` (at or after the last row); rows skipped in between are -1. */
  setAt(i: number, x: number): void {
    if (this.length < i) this.padTo(i)
    if (this.length === i) this.push(x)
    else this.data[i] = x
  }
  /** Pads with -1 to `n` rows. */
  padTo(n: number): void {
    if (n <= this.length) return
    if (n > this.data.length) this.reserve(Math.max(n, this.data.length * 2))
    this.data.fill(-1, this.length, n)
    this.length = n
  }
}

/**
 * The phases of a task's `startstops` (distributed's actions) that become columns.
 *
 * @since 0.1.0
 * @category models
 */
export const phaseNames = ["gather", "compute", "transfer"] as const

/**
 * Shape dimensions as the `shape` column writes them: joined by "x" ("1000x3"), "" for
 * a scalar (no dimensions); `undefined` when `u` is not an array of non-negative safe
 * integers (the column is then null).
 *
 * @since 0.1.0
 * @category models
 */
export const shapeText = (u: unknown): string | undefined => {
  if (!Array.isArray(u)) return undefined
  for (const d of u) if (!(typeof d === "number" && Number.isSafeInteger(d) && d >= 0)) return undefined
  return u.join("x")
}

/**
 * Raw columns of the task table (Compute events).
 *
 * @since 0.1.0
 * @category models
 */
export class DecodedTaskColumns {
  readonly host = new I32()
  readonly worker = new I32()
  readonly key = new I32()
  readonly name = new I32() // args.name, -1 when absent
  readonly state = new I32()
  readonly end = new F64()
  readonly duration = new F64()
  readonly size = new F64()
  readonly cpuTime = new F64()
  readonly depOffsets = new I32()
  readonly deps = new I32()
  // Tessera's task details (ids / numbers; -1 / NaN where the event lacks them). DASF's
  // events lack stage, peak_memory, io_bytes and startstops: those columns are sparse
  // while decoding (a row is written only when it has the field; `complete` pads them),
  // so a DASF trace's rows cost nothing there.
  readonly stage = new I32()
  readonly type = new I32()
  readonly dtype = new I32()
  /** the shape as a string id: dimensions joined by "x" ("1000x3"; "" for a scalar) */
  readonly shape = new I32()
  readonly peakMemory = new F64()
  readonly ioBytes = new F64()
  /** `startstops` phases, in `phaseNames` order: start, stop of each */
  readonly phases: ReadonlyArray<F64> = Array.from({ length: 2 * phaseNames.length }, () => new F64())
  readonly dependentOffsets = new I32()
  readonly dependents = new I32()
  /**
   * Detail columns nobody will read (a column projection: `leaveOut`): never written,
   * padded or reserved, left empty.
   */
  private unused = { stage: false, type: false, dtype: false, shape: false, peakMemory: false, ioBytes: false, phases: false }
  constructor() {
    this.depOffsets.push(0)
    this.dependentOffsets.push(0)
  }
  /**
   * Leaves these detail columns empty from now on (a decoder that skips their args: a
   * load that will not read them). Each costs a write per row and, padded by
   * `complete`, its pages (the six phase columns: 48 bytes a row, float64 each).
   */
  leaveOut(columns: ReadonlyArray<"stage" | "type" | "dtype" | "shape" | "peakMemory" | "ioBytes" | "phases">): void {
    for (const c of columns) this.unused[c] = true
  }
  get length(): number {
    return this.end.length
  }
  /**
   * Room for `rows` tasks and `deps` dependencies in the dense columns (the sparse detail
   * columns are sized once, by `complete`): a decoder that can estimate its rows copies
   * nothing as they come, and touches each column's pages once.
   */
  reserve(rows: number, deps: number): void {
    for (const c of [this.host, this.worker, this.key, this.name, this.state]) c.reserve(rows)
    if (!this.unused.type) this.type.reserve(rows)
    if (!this.unused.dtype) this.dtype.reserve(rows)
    if (!this.unused.shape) this.shape.reserve(rows)
    for (const c of [this.end, this.duration, this.size, this.cpuTime]) c.reserve(rows)
    this.depOffsets.reserve(rows + 1)
    this.dependentOffsets.reserve(rows + 1)
    this.deps.reserve(deps)
  }
  /** Appends a task's row; its dependencies go to `deps` first, then `endRow` closes it. */
  push(
    host: number,
    worker: number,
    key: number,
    name: number,
    state: number,
    end: number,
    duration: number,
    size: number,
    cpuTime: number
  ): void {
    this.host.push(host)
    this.worker.push(worker)
    this.key.push(key)
    this.name.push(name)
    this.state.push(state)
    this.end.push(end)
    this.duration.push(duration)
    this.size.push(size)
    this.cpuTime.push(cpuTime)
  }
  /**
   * The row's details (after `push`, before `endRow`); `phases` in `phaseNames` order, or
   * null when the event has no `startstops`.
   */
  detail(stage: number, type: number, dtype: number, shape: number, peakMemory: number, ioBytes: number, phases: ArrayLike<number> | null): void {
    const row = this.end.length - 1
    const u = this.unused
    if (!u.type) this.type.push(type)
    if (!u.dtype) this.dtype.push(dtype)
    if (!u.shape) this.shape.push(shape)
    if (stage >= 0 && !u.stage) this.stage.setAt(row, stage)
    if (peakMemory === peakMemory && !u.peakMemory) this.peakMemory.setAt(row, peakMemory)
    if (ioBytes === ioBytes && !u.ioBytes) this.ioBytes.setAt(row, ioBytes)
    if (phases !== null && !u.phases) for (let j = 0; j < this.phases.length; j++) this.phases[j].setAt(row, phases[j])
  }
  /** Pads the sparse detail columns to every row (before reading them); those left out stay empty. */
  complete(): void {
    const n = this.end.length
    const u = this.unused
    if (!u.stage) this.stage.padTo(n)
    if (!u.peakMemory) this.peakMemory.padTo(n)
    if (!u.ioBytes) this.ioBytes.padTo(n)
    if (!u.phases) for (const c of this.phases) c.padTo(n)
  }
  /**
   * Closes the row `push` opened: its dependencies are the ids added to `deps` since,
   * its dependents those added to `dependents`.
   */
  endRow(): void {
    this.depOffsets.push(this.deps.length)
    this.dependentOffsets.push(this.dependents.length)
  }
}

/**
 * Raw columns of the memory table (Managed Memory events).
 *
 * @since 0.1.0
 * @category models
 */
export class MemoryColumns {
  readonly timestamp = new F64()
  readonly host = new I32()
  readonly worker = new I32()
  readonly key = new I32()
  readonly state = new I32()
  readonly size = new F64()
  readonly tasks = new F64()
  /** bytes a GPU worker holds on its device (Tessera's `device` arg; NaN when absent) */
  readonly device = new F64()
  get length(): number {
    return this.timestamp.length
  }
  /** Room for `rows` rows in all (see `DecodedTaskColumns.reserve`). */
  reserve(rows: number): void {
    for (const c of [this.host, this.worker, this.key, this.state]) c.reserve(rows)
    for (const c of [this.timestamp, this.size, this.tasks, this.device]) c.reserve(rows)
  }
  /** Appends one row. */
  push(timestamp: number, host: number, worker: number, key: number, state: number, size: number, tasks: number, device = NaN): void {
    this.timestamp.push(timestamp)
    this.host.push(host)
    this.worker.push(worker)
    this.key.push(key)
    this.state.push(state)
    this.size.push(size)
    this.tasks.push(tasks)
    this.device.push(device)
  }
}

/**
 * The numeric args of a Resource Usage sample, DASF's names, in column order.
 *
 * @since 0.1.0
 * @category models
 */
export const resourceArgs = [
  "cpu",
  "memory",
  "gpu_utilization",
  "gpu_memory_used",
  "host_net_io.read_bps",
  "host_net_io.write_bps",
  "host_disk_io.read_bps",
  "host_disk_io.write_bps",
  "num_fds",
  "time"
] as const

/**
 * Raw columns of the resource table (Resource Usage events).
 *
 * @since 0.1.0
 * @category models
 */
export class ResourceColumns {
  readonly timestamp = new F64()
  readonly host = new I32()
  readonly values: ReadonlyArray<F64> = resourceArgs.map(() => new F64())
  get length(): number {
    return this.timestamp.length
  }
}
