/**
 * NonFinite: what a fitting stage does with rows that hold NaN or ±Infinity.
 *
 * - `"raise"` (the default, as scikit-learn's `ValueError: Input contains NaN`): fail
 *   with a `DslError` (`NonFinite`) naming the stage, the first such row (0-based, of the
 *   stage's input), its column and value, and how many rows hold one.
 * - `"skip"`: leave those rows out of the fit and report how many were left out; the
 *   stage's outputs keep one row per input row (see Normalize and KMeans).
 *
 * Integer arrays hold no such values and are not scanned. The scan is one task per
 * chunk over an array already in memory (fitting stages persist their input first);
 * "skip" copies the finite rows out only when some row is not finite.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import * as Kernel from "../engine/Kernel.ts"
import type { ChunkedArray } from "./ChunkedArray.ts"
import { checkMemory, fromChunks, mapToValues, nbytes } from "./ChunkedArray.ts"
import { DslError } from "./DslError.ts"
import type * as Chunk from "../engine/Chunk.ts"
import type { Scan } from "./internal/nonFinite.ts"

/**
 * What to do with rows holding NaN or ±Infinity.
 *
 * @since 0.1.0
 * @category models
 */
export type Policy = "raise" | "skip"

/**
 * The finite part of an array: `X` itself when every row is finite, else a copy without
 * the `skipped` rows.
 *
 * @since 0.1.0
 * @category models
 */
export interface Finite<D extends Chunk.DType> {
  readonly X: ChunkedArray<D>
  readonly skipped: number
}

const ref = (name: string): Kernel.KernelRef => Kernel.ref(Kernel.sibling(import.meta.url, "./internal/nonFinite").href, name)

/**
 * Kernel references of the policy, for stages that label rows (`assignFinite`: -1 for a
 * row that is not finite).
 *
 * @since 0.1.0
 * @category constructors
 */
export const kernels = {
  scan: ref("scanNonFinite"),
  drop: ref("dropNonFinite"),
  assignFinite: ref("assignFinite")
} as const

/**
 * Applies the policy to `X` for `stage` (see the module comment).
 *
 * @since 0.1.0
 * @category combinators
 */
export const apply = <D extends Chunk.DType>(X: ChunkedArray<D>, policy: Policy = "raise", stage: string) =>
  Effect.gen(function*() {
    if (policy !== "raise" && policy !== "skip") {
      return yield* Effect.fail(DslError.invalidOption("nonFinite", `must be "raise" or "skip", got ${JSON.stringify(policy)}`))
    }
    if (X.dtype !== "float64" && X.dtype !== "float32") return { X, skipped: 0 } satisfies Finite<D>
    const scans = yield* mapToValues<Scan>(X, { name: "scan_non_finite", kernel: kernels.scan, stage })
    const skipped = scans.reduce((n, s) => n + s.rows, 0)
    if (skipped === 0) return { X, skipped } satisfies Finite<D>
    if (policy === "raise") {
      let rowStart = 0
      for (const [i, s] of scans.entries()) {
        if (s.row >= 0) return yield* Effect.fail(DslError.nonFinite(stage, rowStart + s.row, s.column, s.value, skipped))
        rowStart += X.chunkRows[i]!
      }
    }
    const rows = X.shape[0]!
    if (skipped === rows) {
      return yield* Effect.fail(DslError.invalidOption("nonFinite", `stage "${stage}": "skip" leaves no rows, all ${rows} hold NaN or Infinity`))
    }
    yield* checkMemory(stage, `copying the finite rows of ${rows}`, nbytes(X))
    const chunks = yield* mapToValues<Chunk.Chunk>(X, { name: "drop_non_finite", kernel: kernels.drop, stage })
    // chunks left empty are dropped: reductions read a chunk's width from its rows
    return { X: fromChunks(X.dtype, chunks.filter((c) => c.shape[0]! > 0)), skipped } satisfies Finite<D>
  })
