/**
 * The one layout of a task's timings: a row of {@link TIMING_FLOATS} float64s, its fields
 * named by {@link Timing}. Every worker kind writes it (worker threads, GPU workers, the
 * in-process runner, a cluster worker's pool), the cluster's wire carries it unchanged
 * (`RunReply.recs`, shifted onto the scheduler's clock by {@link copyRow}), and the one
 * record builder (`taskRecord.ts`) reads it. Adding a field to a task's record is one
 * entry in {@link Timing}, its writer, and the builder.
 *
 * Rows live side by side in one Float64Array (row `q` at offset `q * TIMING_FLOATS`), so a
 * batch's timings travel between threads and processes as one typed array, not an
 * object per task. A field a worker does not measure is NaN (`newRows` fills with NaN):
 * the builder leaves it out of the record. NaN as the row's `gatherStart` means "no
 * record" (a task that completed without being profiled).
 *
 * @since 0.1.0
 * @internal
 */
import type { TaskRecord } from "../EngineEvents.ts"

/**
 * Field offsets within a row. The first {@link CLOCK_FIELDS} are timestamps (epoch
 * seconds on the worker's clock, moved by {@link copyRow}'s shift); the rest are amounts.
 *
 * @since 0.1.0
 * @internal
 */
export const Timing = {
  gatherStart: 0,
  gatherStop: 1,
  computeStart: 2,
  computeStop: 3,
  transferStart: 4,
  transferStop: 5,
  /** thread CPU seconds of gather + compute + transfer */
  cpuTime: 6,
  /** bytes: highest heap + external memory read around the task */
  peakMemory: 7,
  /** bytes the kernel reported reading (`TaskIo`) */
  ioBytes: 8,
  /** GPU tasks: seconds their kernels ran on the device */
  gpuTime: 9
} as const

/**
 * Floats per row.
 *
 * @since 0.1.0
 * @internal
 */
export const TIMING_FLOATS = Object.keys(Timing).length

/**
 * The fields that are timestamps (offsets 0 to CLOCK_FIELDS - 1).
 *
 * @since 0.1.0
 * @internal
 */
export const CLOCK_FIELDS = 6

/**
 * Rows for `n` tasks, every field NaN (not measured).
 *
 * @since 0.1.0
 * @internal
 */
export const newRows = (n: number): Float64Array => new Float64Array(n * TIMING_FLOATS).fill(NaN)

/**
 * Writes the three phases at offset `o` from four instants, the way every executor cuts
 * a task: gather from `start` to `computeStart`, compute to `transferStart`, transfer to
 * `stop` (each phase starts where the previous one stopped).
 *
 * @since 0.1.0
 * @internal
 */
export const writePhases = (
  rows: Float64Array,
  o: number,
  start: number,
  computeStart: number,
  transferStart: number,
  stop: number
): void => {
  rows[o + Timing.gatherStart] = start
  rows[o + Timing.gatherStop] = computeStart
  rows[o + Timing.computeStart] = computeStart
  rows[o + Timing.computeStop] = transferStart
  rows[o + Timing.transferStart] = transferStart
  rows[o + Timing.transferStop] = stop
}

/**
 * Writes the amounts at offset `o` (NaN: not measured).
 *
 * @since 0.1.0
 * @internal
 */
export const writeAmounts = (rows: Float64Array, o: number, cpuTime: number, peakMemory: number, ioBytes: number): void => {
  rows[o + Timing.cpuTime] = cpuTime
  rows[o + Timing.peakMemory] = peakMemory
  rows[o + Timing.ioBytes] = ioBytes
}

/**
 * Copies the row at `from[fo]` to `to[too]`, its timestamps plus `shift` seconds (another
 * clock's offset), its amounts as they are.
 *
 * @since 0.1.0
 * @internal
 */
export const copyRow = (from: ArrayLike<number>, fo: number, to: Float64Array, too: number, shift: number): void => {
  for (let q = 0; q < CLOCK_FIELDS; q++) to[too + q] = from[fo + q]! + shift
  for (let q = CLOCK_FIELDS; q < TIMING_FLOATS; q++) to[too + q] = from[fo + q]!
}

/**
 * Writes a TaskRecord's timings into the row at offset `o` (an absent optional field: NaN).
 *
 * @since 0.1.0
 * @internal
 */
export const writeRecord = (rows: Float64Array, o: number, r: TaskRecord): void => {
  const ph = r.phases
  rows[o + Timing.gatherStart] = ph.gather[0]
  rows[o + Timing.gatherStop] = ph.gather[1]
  rows[o + Timing.computeStart] = ph.compute[0]
  rows[o + Timing.computeStop] = ph.compute[1]
  rows[o + Timing.transferStart] = ph.transfer[0]
  rows[o + Timing.transferStop] = ph.transfer[1]
  rows[o + Timing.cpuTime] = r.cpuTime
  rows[o + Timing.peakMemory] = r.peakMemory ?? NaN
  rows[o + Timing.ioBytes] = r.ioBytes ?? NaN
  rows[o + Timing.gpuTime] = r.gpuTime ?? NaN
}

/**
 * Whether the row at offset `o` holds a record (its `gatherStart` is a number).
 *
 * @since 0.1.0
 * @internal
 */
export const hasRow = (rows: ArrayLike<number>, o: number): boolean => !Number.isNaN(rows[o + Timing.gatherStart]!)
