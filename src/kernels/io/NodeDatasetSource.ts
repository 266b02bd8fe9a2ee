/**
 * The local-file DatasetSource: recognises `.npy` and Arrow IPC (file or stream) files by
 * their magic bytes and reads just their headers (npy: the header and the file size;
 * Arrow: the schema and the batches' row counts) with node:fs. Provide `layer` to run
 * `DatasetArray.make` on local files.
 *
 * A relative path is resolved here, against the describing (driver's) process's working
 * directory, and the description carries the absolute path: the read tasks name it, so a
 * worker process started elsewhere (`tessera worker` in another directory, on another
 * host with the same layout) reads the same file. A missing file is `NotFound`.
 *
 * @since 0.1.0
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { Effect, Layer } from "effect"
import { describeArrowUnsafe } from "./arrow.ts"
import type { DatasetInfo, DescribeOptions } from "./DatasetSource.ts"
import { DatasetFileError, DatasetSource } from "./DatasetSource.ts"
import { cannotOpen, describeNpyUnsafe, NpyError } from "./npy.ts"

const fsPath = (path: string): string | URL => (path.startsWith("file:") ? new URL(path) : path)

/** First 8 bytes of the file (fewer if it is shorter). */
const magicUnsafe = (path: string): Uint8Array => {
  const fd = NodeFs.openSync(fsPath(path), "r")
  try {
    const b = new Uint8Array(8)
    return b.subarray(0, NodeFs.readSync(fd, b, 0, 8, 0))
  } finally {
    NodeFs.closeSync(fd)
  }
}

type Kind = "npy" | "arrow" | undefined

const sniff = (path: string, m: Uint8Array): Kind => {
  const ascii = new TextDecoder("latin1").decode(m)
  if (m[0] === 0x93 && ascii.slice(1, 6) === "NUMPY") return "npy"
  if (ascii.startsWith("ARROW1")) return "arrow"
  if (m.length >= 4 && m[0] === 0xff && m[1] === 0xff && m[2] === 0xff && m[3] === 0xff) return "arrow"
  if (/\.npy$/i.test(path)) return "npy" // the npy reader says what is wrong with it
  if (/\.(arrow|arrows|feather|ipc)$/i.test(path)) return "arrow"
  return undefined
}

/**
 * `path` made absolute against this process's working directory (a `file:` URL, or an
 * absolute path, as it is).
 *
 * @since 0.1.0
 * @category getters
 */
export const absolutePath = (path: string): string => path.startsWith("file:") || NodePath.isAbsolute(path) ? path : NodePath.resolve(path)

/**
 * Describes a local dataset file; the description's `path` is absolute (see the module
 * comment). Errors name the path as given.
 *
 * @since 0.1.0
 * @category constructors
 */
export const describe = (given: string, options: DescribeOptions = {}): Effect.Effect<DatasetInfo, DatasetFileError> =>
  Effect.gen(function*() {
    const path = absolutePath(given)
    const m = yield* Effect.try({
      try: () => magicUnsafe(path),
      catch: (e) => {
        const c = cannotOpen(given, e)
        return new DatasetFileError({ file: given, problem: c.reason as "NotFound" | "Unreadable", detail: c.detail })
      }
    })
    switch (sniff(path, m)) {
      case "npy":
        return yield* Effect.try({
          try: (): DatasetInfo => ({ format: "npy", path, ...describeNpyUnsafe(path) }),
          catch: (e) =>
            e instanceof NpyError
              ? new DatasetFileError({ file: given, problem: e.reason, detail: e.detail, ...(e.offset === undefined ? {} : { offset: e.offset }) })
              : new DatasetFileError({ file: given, problem: "Unreadable", detail: String(e) })
        })
      case "arrow":
        return yield* Effect.try({
          try: () => describeArrowUnsafe(path, options.columns),
          catch: (e) =>
            e instanceof DatasetFileError
              ? new DatasetFileError({ file: given, problem: e.problem, detail: e.detail, ...(e.offset === undefined ? {} : { offset: e.offset }) })
              : new DatasetFileError({ file: given, problem: "NotArrow", detail: String(e) })
        })
      case undefined:
        return yield* Effect.fail(
          new DatasetFileError({ file: given, problem: "UnknownFormat", detail: "neither a .npy file nor an Arrow IPC file or stream" })
        )
    }
  })

/**
 * The DatasetSource over local files.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<DatasetSource> = Layer.succeed(DatasetSource, { describe })
