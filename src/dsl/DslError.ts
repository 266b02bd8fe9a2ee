/**
 * DslError: what is wrong with a pipeline or an array before anything runs, and where
 * (the stage name, and both shapes or dtypes for a mismatch).
 *
 * @since 0.1.0
 */
import { Data } from "effect"

/**
 * Why a pipeline or array was rejected.
 *
 * @since 0.1.0
 * @category errors
 */
export type DslErrorReason =
  | { readonly _tag: "ShapeMismatch"; readonly stage: string; readonly expected: ReadonlyArray<number | string>; readonly actual: ReadonlyArray<number> }
  | { readonly _tag: "DTypeMismatch"; readonly stage: string; readonly expected: string; readonly actual: string }
  | { readonly _tag: "UnknownInput"; readonly stage: string; readonly input: string }
  | { readonly _tag: "DuplicateStage"; readonly stage: string }
  | { readonly _tag: "InvalidOption"; readonly option: string; readonly detail: string }
  | { readonly _tag: "ChunksMismatch"; readonly stage: string; readonly expected: ReadonlyArray<number>; readonly actual: ReadonlyArray<number> }
  | { readonly _tag: "OutOfMemory"; readonly stage: string; readonly what: string; readonly needed: number; readonly available: number }
  | {
    readonly _tag: "NonFinite"
    readonly stage: string
    /** first row (0-based, of the stage's input) holding NaN or ±Infinity */
    readonly row: number
    readonly column: number
    readonly value: number
    /** rows holding NaN or ±Infinity */
    readonly rows: number
  }
  | {
    readonly _tag: "BadDataset"
    readonly file: string
    readonly problem: string
    readonly detail: string
    /** the byte where the problem lies, when it lies at one place */
    readonly offset?: number
  }

const describe = (r: DslErrorReason): string => {
  switch (r._tag) {
    case "ShapeMismatch":
      return `stage "${r.stage}": shape mismatch: expected [${r.expected.join(", ")}], got [${r.actual.join(", ")}]`
    case "DTypeMismatch":
      return `stage "${r.stage}": dtype mismatch: expected ${r.expected}, got ${r.actual}`
    case "UnknownInput":
      return `stage "${r.stage}": input "${r.input}" is not a stage of this pipeline`
    case "DuplicateStage":
      return `stage "${r.stage}" is already in the pipeline`
    case "InvalidOption":
      return `invalid option ${r.option}: ${r.detail}`
    case "ChunksMismatch":
      return `stage "${r.stage}": row chunks differ: [${r.expected.join(", ")}] and [${r.actual.join(", ")}] (rechunk one to match)`
    case "BadDataset":
      return `${r.file}: ${r.problem}: ${r.detail}`
    case "OutOfMemory":
      return `stage "${r.stage}": ${r.what} needs ${bytes(r.needed)}, ${bytes(r.available)} of memory is available; use fewer rows, or run where there is more memory`
    case "NonFinite":
      return `stage "${r.stage}": input contains ${Number.isNaN(r.value) ? "NaN" : r.value > 0 ? "Infinity" : "-Infinity"} at row ${r.row}, column ${r.column} (${r.rows} ${r.rows === 1 ? "row holds" : "rows hold"} NaN or Infinity); clean the data, or pass nonFinite: "skip" to leave such rows out`
  }
}

/** `12.3 GiB (13207024435 bytes)`. */
const bytes = (n: number): string => {
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"]
  let v = n
  let u = 0
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024
    u++
  }
  return u === 0 ? `${n} bytes` : `${v.toFixed(1)} ${units[u]} (${n} bytes)`
}

/**
 * The DSL's one error class, with a tagged `reason`.
 *
 * @since 0.1.0
 * @category errors
 */
export class DslError extends Data.TaggedError("DslError")<{ readonly reason: DslErrorReason }> {
  override get message(): string {
    return describe(this.reason)
  }
  static shapeMismatch(stage: string, expected: ReadonlyArray<number | string>, actual: ReadonlyArray<number>): DslError {
    return new DslError({ reason: { _tag: "ShapeMismatch", stage, expected, actual } })
  }
  static dtypeMismatch(stage: string, expected: string, actual: string): DslError {
    return new DslError({ reason: { _tag: "DTypeMismatch", stage, expected, actual } })
  }
  static unknownInput(stage: string, input: string): DslError {
    return new DslError({ reason: { _tag: "UnknownInput", stage, input } })
  }
  static duplicateStage(stage: string): DslError {
    return new DslError({ reason: { _tag: "DuplicateStage", stage } })
  }
  static invalidOption(option: string, detail: string): DslError {
    return new DslError({ reason: { _tag: "InvalidOption", option, detail } })
  }
  static chunksMismatch(stage: string, expected: ReadonlyArray<number>, actual: ReadonlyArray<number>): DslError {
    return new DslError({ reason: { _tag: "ChunksMismatch", stage, expected, actual } })
  }
  static outOfMemory(stage: string, what: string, needed: number, available: number): DslError {
    return new DslError({ reason: { _tag: "OutOfMemory", stage, what, needed, available } })
  }
  static nonFinite(stage: string, row: number, column: number, value: number, rows: number): DslError {
    return new DslError({ reason: { _tag: "NonFinite", stage, row, column, value, rows } })
  }
  static badDataset(file: string, problem: string, detail: string, offset?: number): DslError {
    return new DslError({ reason: { _tag: "BadDataset", file, problem, detail, ...(offset === undefined ? {} : { offset }) } })
  }
}

/**
 * Whether `u` is a DslError.
 *
 * @since 0.1.0
 * @category guards
 */
export const isDslError = (u: unknown): u is DslError => u instanceof DslError
