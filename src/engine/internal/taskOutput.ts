/**
 * A task's declared output (`TaskSpec.output`), checked where the kernel ran: encoded as
 * four ints a task for the batches workers get, compared with what the kernel returned,
 * and both said in words for a `BadOutput` error.
 *
 * @since 0.1.0
 * @internal
 */
import * as Chunk from "../Chunk.ts"
import type { TaskOutput } from "../TaskGraph.ts"

/**
 * A task's declared output as four ints (`OUT_STRIDE`), as batches carry it to workers:
 * dtype code (index in `dtypeCodes`; -1: nothing declared, no check), number of
 * dimensions, rows, and elements per row (the product of the other dimensions).
 *
 * @since 0.1.0
 * @internal
 */
export const OUT_STRIDE = 4

/** @since 0.1.0 @internal */
export const dtypeCodes: ReadonlyArray<Chunk.DType> = ["float32", "float64", "int32", "int64", "uint8"]

/**
 * Writes `output` (or "nothing declared") at `o` of `into`.
 *
 * @since 0.1.0
 * @internal
 */
export const encodeOutput = (output: TaskOutput | undefined, into: Int32Array, o: number): void => {
  if (output === undefined) {
    into[o] = -1
    return
  }
  let inner = 1
  for (let d = 1; d < output.shape.length; d++) inner *= output.shape[d]!
  into[o] = dtypeCodes.indexOf(output.dtype)
  into[o + 1] = output.shape.length
  into[o + 2] = output.shape[0] ?? 1
  into[o + 3] = inner
}

/**
 * Null when `r` is the chunk declared at `o` of `out` (or nothing is declared there),
 * else a description of what `r` is. Cheap: a few comparisons on a chunk's fields.
 *
 * @since 0.1.0
 * @internal
 */
export const outputMismatch = (r: unknown, out: Int32Array, o: number): string | null => {
  const code = out[o]!
  if (code < 0) return null
  if (Chunk.isChunk(r)) {
    const s = r.shape
    if (r.dtype === dtypeCodes[code] && s.length === out[o + 1] && s[0] === out[o + 2]) {
      let inner = 1
      for (let d = 1; d < s.length; d++) inner *= s[d]!
      if (inner === out[o + 3] && r.data.length === out[o + 2]! * inner) return null
    }
  }
  return describeValue(r)
}

/**
 * Checks a result against a declared output; null when it matches (or nothing is
 * declared), else what it is. The in-process form of `outputMismatch`, for executors
 * that hold the spec (the sync runner, a cluster worker's local graph).
 *
 * @since 0.1.0
 * @internal
 */
export const checkOutput = (r: unknown, output: TaskOutput | undefined): string | null => {
  if (output === undefined) return null
  if (Chunk.isChunk(r) && r.dtype === output.dtype && r.shape.length === output.shape.length) {
    let n = 1
    let same = true
    for (let d = 0; d < r.shape.length; d++) {
      if (r.shape[d] !== output.shape[d]) same = false
      n *= r.shape[d]!
    }
    if (same && r.data.length === n) return null
  }
  return describeValue(r)
}

/**
 * A declared output in words: `a Chunk of float64 [300, 4]`.
 *
 * @since 0.1.0
 * @internal
 */
export const describeOutput = (output: TaskOutput): string => `a Chunk of ${output.dtype} [${output.shape.join(", ")}]`

/** What a kernel returned, in words, for a BadOutput error. */
const describeValue = (r: unknown): string => {
  if (r === null || r === undefined) return String(r)
  if (typeof r !== "object") return `a ${typeof r} (${String(r).slice(0, 40)})`
  if (Chunk.isChunk(r)) {
    let n = 1
    for (const d of r.shape) n *= d
    return `a Chunk of ${r.dtype} [${r.shape.join(", ")}]${n !== r.data.length ? ` whose data has ${r.data.length} elements` : ""}`
  }
  if (ArrayBuffer.isView(r)) {
    return `a ${r.constructor.name} of ${(r as Chunk.TypedArray).length ?? r.byteLength} elements (not a Chunk: return { dtype, shape, data })`
  }
  const c = r as { dtype?: unknown; shape?: unknown; data?: unknown }
  if ("dtype" in c || "shape" in c || "data" in c) {
    const data = ArrayBuffer.isView(c.data) ? `a ${c.data.constructor.name}` : typeof c.data
    return `an object with dtype ${JSON.stringify(c.dtype)}, shape ${JSON.stringify(c.shape)} and data ${data} (not a valid Chunk: the data must be the dtype's typed array)`
  }
  if (Array.isArray(r)) return `an Array of ${r.length} elements`
  return `an object (${(r as object).constructor?.name ?? "Object"})`
}

/**
 * A kernel's result did not match its declaration: thrown inside a worker's task loop
 * and turned into a `BatchError` with `output` set.
 *
 * @since 0.1.0
 * @internal
 */
export class OutputMismatch extends Error {
  readonly actual: string
  constructor(actual: string) {
    super(`returned ${actual}`)
    this.actual = actual
  }
}
