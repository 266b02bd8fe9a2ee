/**
 * ArrowTable: computes a ChunkedArray into an Apache Arrow `Table` in this thread — one
 * column per array column (a 1-D array is one column), one record batch per chunk. A 1-D
 * array's chunks become the column's buffers without a copy (they stay in shared
 * memory); a 2-D array is row-major, so each chunk's columns are copied out of it.
 *
 * Pure: builds in-memory Arrow objects; writing IPC bytes is `tableToIPC`'s job.
 *
 * @since 0.1.0
 */
import { makeVector, Table } from "apache-arrow"
import type { Vector } from "apache-arrow"
import { Effect } from "effect"
import type * as Chunk from "../engine/Chunk.ts"
import type { ComputeError, GraphError } from "../engine/EngineError.ts"
import type { Executor } from "../engine/Executor.ts"
import type { ChunkedArray } from "./ChunkedArray.ts"
import { persist } from "./ChunkedArray.ts"
import { DslError } from "./DslError.ts"

/**
 * Options of {@link toTable}.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToTableOptions {
  /** column names, one per column (default "0", "1", ... as pandas labels them) */
  readonly names?: ReadonlyArray<string>
}

type Column = Exclude<Chunk.TypedArray, Int8Array | Int16Array | Uint16Array | Uint32Array | BigUint64Array | Uint8ClampedArray>

/** Column j of a row-major chunk with d columns, copied. Hot loop: plain strided copy. */
const columnOf = (c: Chunk.Chunk, j: number, d: number): Column => {
  const rows = c.shape[0]!
  const Ctor = c.data.constructor as new(n: number) => Column
  const out = new Ctor(rows)
  const x = c.data as unknown as ArrayLike<number>
  const o = out as unknown as { [i: number]: number }
  for (let r = 0, i = j; r < rows; r++, i += d) o[r] = x[i]!
  return out
}

/**
 * Computes the array and returns it as an Arrow Table (columns named by `names`).
 * Fails with a `DslError` when `names` does not name every column once.
 *
 * @since 0.1.0
 * @category combinators
 */
export const toTable = (
  X: ChunkedArray,
  options: ToTableOptions = {}
): Effect.Effect<Table, ComputeError | GraphError | DslError, Executor> =>
  Effect.gen(function*() {
    const d = X.shape.length === 2 ? X.shape[1]! : 1
    const names = options.names ?? Array.from({ length: d }, (_, j) => String(j))
    if (names.length !== d) return yield* Effect.fail(DslError.invalidOption("names", `${names.length} names for ${d} columns`))
    if (new Set(names).size !== names.length) return yield* Effect.fail(DslError.invalidOption("names", `duplicate column names: ${names.join(", ")}`))
    const data = yield* persist(X)
    const chunks = data.blocks.map((b) => (b._tag === "Value" ? b.chunk : undefined)).filter((c) => c !== undefined)
    const columns: Record<string, Vector> = {}
    names.forEach((name, j) => {
      const parts = chunks.map((c) => (X.shape.length === 2 ? columnOf(c, j, d) : (c.data as Column)))
      columns[name] = makeVector(parts as ReadonlyArray<Float64Array>) as unknown as Vector
    })
    return new Table(columns)
  })
