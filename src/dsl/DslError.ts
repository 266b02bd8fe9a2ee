/**
 * The DSL's errors, in the engine's recipe (EngineError): `DslError` says what is wrong
 * with a pipeline or an array before anything runs, and where (the stage name, and both
 * shapes or dtypes for a mismatch), with a tagged `reason`; `StageFailed` is a pipeline
 * run's failure, holding the failing stage's own typed error as a value. Every message
 * is written here. Defects (bugs: a throwing stage, a kernel's unexpected exception)
 * stay defects.
 *
 * @since 0.1.0
 */
import { Data } from "effect"

/**
 * An array's shape is not the one the stage needs.
 *
 * @since 0.1.0
 * @category errors
 */
export class ShapeMismatch extends Data.TaggedError("ShapeMismatch")<{
  readonly stage: string
  readonly expected: ReadonlyArray<number | string>
  readonly actual: ReadonlyArray<number>
  readonly message: string
}> {}

/**
 * An array's dtype is not the one the stage needs.
 *
 * @since 0.1.0
 * @category errors
 */
export class DTypeMismatch extends Data.TaggedError("DTypeMismatch")<{
  readonly stage: string
  readonly expected: string
  readonly actual: string
  readonly message: string
}> {}

/**
 * A stage's input names a node of another pipeline (or one not added).
 *
 * @since 0.1.0
 * @category errors
 */
export class UnknownInput extends Data.TaggedError("UnknownInput")<{
  readonly stage: string
  readonly input: string
  readonly message: string
}> {}

/**
 * Two stages share a name.
 *
 * @since 0.1.0
 * @category errors
 */
export class DuplicateStage extends Data.TaggedError("DuplicateStage")<{
  readonly stage: string
  readonly message: string
}> {}

/**
 * An option is out of range.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidOption extends Data.TaggedError("InvalidOption")<{
  readonly option: string
  readonly detail: string
  readonly message: string
}> {}

/**
 * Two arrays combined row by row are chunked differently.
 *
 * @since 0.1.0
 * @category errors
 */
export class ChunksMismatch extends Data.TaggedError("ChunksMismatch")<{
  readonly stage: string
  readonly expected: ReadonlyArray<number>
  readonly actual: ReadonlyArray<number>
  readonly message: string
}> {}

/**
 * A dataset file cannot be used.
 *
 * @since 0.1.0
 * @category errors
 */
export class BadDataset extends Data.TaggedError("BadDataset")<{
  readonly file: string
  readonly problem: string
  readonly detail: string
  /** the byte where the problem lies, when it lies at one place */
  readonly offset?: number
  readonly message: string
}> {}

/**
 * What a persist or compute would keep does not fit in the memory the executor has.
 *
 * @since 0.1.0
 * @category errors
 */
export class OutOfMemory extends Data.TaggedError("OutOfMemory")<{
  readonly stage: string
  readonly what: string
  readonly needed: number
  readonly available: number
  readonly message: string
}> {}

/**
 * An input of Normalize or KMeans holds NaN or ±Infinity (and `nonFinite` is "raise").
 *
 * @since 0.1.0
 * @category errors
 */
export class NonFinite extends Data.TaggedError("NonFinite")<{
  readonly stage: string
  /** first row (0-based, of the stage's input) holding NaN or ±Infinity */
  readonly row: number
  readonly column: number
  readonly value: number
  /** rows holding NaN or ±Infinity */
  readonly rows: number
  readonly message: string
}> {}

/**
 * A computation over finite values overflowed float64 (a mean or variance of values
 * near ±1e308): the stage and the column.
 *
 * @since 0.1.0
 * @category errors
 */
export class Overflow extends Data.TaggedError("Overflow")<{
  readonly stage: string
  readonly column: number
  readonly what: string
  readonly message: string
}> {}

/**
 * Why a pipeline or array was rejected.
 *
 * @since 0.1.0
 * @category errors
 */
export type DslErrorReason =
  | ShapeMismatch
  | DTypeMismatch
  | UnknownInput
  | DuplicateStage
  | InvalidOption
  | ChunksMismatch
  | BadDataset
  | OutOfMemory
  | NonFinite
  | Overflow

const wrap = (reason: DslErrorReason): DslError => new DslError({ reason, message: reason.message })

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
 * The DSL's one error class for invalid pipelines and arrays, with a tagged `reason`.
 * The static constructors write the messages.
 *
 * @since 0.1.0
 * @category errors
 */
export class DslError extends Data.TaggedError("DslError")<{ readonly reason: DslErrorReason; readonly message: string }> {
  static shapeMismatch(stage: string, expected: ReadonlyArray<number | string>, actual: ReadonlyArray<number>, hint?: string): DslError {
    const message = `stage "${stage}": shape mismatch: expected [${expected.join(", ")}], got [${actual.join(", ")}]${hint !== undefined ? `: ${hint}` : ""}`
    return wrap(new ShapeMismatch({ stage, expected, actual, message }))
  }
  static dtypeMismatch(stage: string, expected: string, actual: string): DslError {
    return wrap(new DTypeMismatch({ stage, expected, actual, message: `stage "${stage}": dtype mismatch: expected ${expected}, got ${actual}` }))
  }
  static unknownInput(stage: string, input: string): DslError {
    return wrap(new UnknownInput({ stage, input, message: `stage "${stage}": input "${input}" is not a stage of this pipeline` }))
  }
  static duplicateStage(stage: string): DslError {
    return wrap(new DuplicateStage({ stage, message: `stage "${stage}" is already in the pipeline` }))
  }
  static invalidOption(option: string, detail: string): DslError {
    return wrap(new InvalidOption({ option, detail, message: `invalid option ${option}: ${detail}` }))
  }
  static chunksMismatch(stage: string, expected: ReadonlyArray<number>, actual: ReadonlyArray<number>): DslError {
    const message = `stage "${stage}": row chunks differ: [${expected.join(", ")}] and [${actual.join(", ")}] (rechunk one to match)`
    return wrap(new ChunksMismatch({ stage, expected, actual, message }))
  }
  static outOfMemory(stage: string, what: string, needed: number, available: number): DslError {
    const message = `stage "${stage}": ${what} needs ${bytes(needed)}, ${bytes(available)} of memory is available; use fewer rows, or run where there is more memory`
    return wrap(new OutOfMemory({ stage, what, needed, available, message }))
  }
  static nonFinite(stage: string, row: number, column: number, value: number, rows: number): DslError {
    const what = Number.isNaN(value) ? "NaN" : value > 0 ? "Infinity" : "-Infinity"
    const message = `stage "${stage}": input contains ${what} at row ${row}, column ${column} (${rows} ${rows === 1 ? "row holds" : "rows hold"} NaN or Infinity); clean the data, or pass nonFinite: "skip" to leave such rows out`
    return wrap(new NonFinite({ stage, row, column, value, rows, message }))
  }
  static overflow(stage: string, column: number, what: string): DslError {
    const message = `stage "${stage}": ${what} of column ${column} overflows float64 although every value is finite; scale the data down first`
    return wrap(new Overflow({ stage, column, what, message }))
  }
  static badDataset(file: string, problem: string, detail: string, offset?: number): DslError {
    const message = `${file}: ${problem}: ${detail}${offset === undefined ? "" : ` (byte ${offset})`}`
    return wrap(new BadDataset({ file, problem, detail, ...(offset === undefined ? {} : { offset }), message }))
  }
}

/**
 * Whether `u` is a DslError.
 *
 * @since 0.1.0
 * @category guards
 */
export const isDslError = (u: unknown): u is DslError => u instanceof DslError

/**
 * A pipeline stage failed: `stage` names it, and `error` is the stage's own typed
 * failure, kept as a value (a `DslError`, a `ComputeError`, ...). Only failures: a
 * stage that dies (a bug) stays a defect.
 *
 * @since 0.1.0
 * @category errors
 */
export class StageFailed extends Data.TaggedError("StageFailed")<{
  readonly stage: string
  readonly error: unknown
  /** the same as `error`: the standard place error reporters look (the CLI's `--verbose` prints its chain of stacks, a kernel's worker-side one included) */
  readonly cause: unknown
  readonly message: string
}> {
  static make(stage: string, error: unknown): StageFailed {
    return new StageFailed({ stage, error, cause: error, message: `stage "${stage}" failed: ${describe(error)}` })
  }
}

const describe = (error: unknown): string =>
  typeof error === "object" && error !== null && typeof (error as { message?: unknown }).message === "string"
    ? (error as { message: string }).message
    : String(error)

/**
 * Whether `u` is a StageFailed.
 *
 * @since 0.1.0
 * @category guards
 */
export const isStageFailed = (u: unknown): u is StageFailed => u instanceof StageFailed
