/**
 * Output files that never half-exist and never touch an input: every file Tessera's
 * commands write (the HTML report, exports, analyses' CSV and Arrow files, figures,
 * `.cpuprofile` files, `sql --arrow`) goes through this module.
 *
 * - **Beside, then renamed**: the bytes go to a temporary file in the output's own folder
 *   (`.NAME.tmp-PID-RANDOM`, created exclusively), which is renamed over `NAME` only once
 *   every byte is written and the file closed. A failed write (ENOSPC, EFBIG, EIO), an
 *   exception in the producer, or an interrupt (SIGINT, SIGTERM: the process's `exit`)
 *   removes the temporary file and leaves the previous `NAME` as it was, or no `NAME` at
 *   all: never a truncated one. A process killed outright (SIGKILL) may leave a
 *   `.NAME.tmp-…` file, never a truncated `NAME`. Not fsync'd: this is about processes,
 *   not power cuts.
 * - **Never an input**: with `inputs`, an output that is the same file as one of them
 *   (the same device and inode: the same path, a symbolic link or a hard link to it) is
 *   refused with {@link OutputIsInput} before anything is written. The rename would leave
 *   the input's bytes alone anyway (it replaces the name, not the file), but the user
 *   asked for the input's name to be replaced by something else: a sentence, not a
 *   surprise.
 * - An output that is a symbolic link is written through: the link's target is replaced
 *   (in the target's folder), the link kept. An existing output's permission bits are
 *   kept.
 * - Short writes are written on (a write(2) that wrote part of a buffer before the disk
 *   filled), so a failure is an error, never a silently shorter file.
 *
 * @since 0.1.0
 */
import { lstatSync, realpathSync, statSync, unlinkSync } from "node:fs"
import type { Stats } from "node:fs"
import { chmod, open, realpath, rename, stat, unlink } from "node:fs/promises"
import type { FileHandle } from "node:fs/promises"
import { basename, dirname, join, resolve } from "node:path"
import * as Data from "effect/Data"
import { makeDirectory } from "./Directory.ts"

/**
 * An output that is one of the inputs (same device and inode). `flag` is the option that
 * named it, when known (`--output`).
 *
 * @since 0.1.0
 * @category errors
 */
export class OutputIsInput extends Data.TaggedError("OutputIsInput")<{
  /** the output, as given */
  readonly output: string
  /** the input it is, as given */
  readonly input: string
  /** how: the same path, a symbolic link or a hard link */
  readonly how: "same path" | "symbolic link" | "hard link"
  /** the flag that named the output (`--output`), if known */
  readonly flag?: string | undefined
}> {
  override get message(): string {
    const how = this.how === "same path" ? "" : this.how === "symbolic link" ? " (a symbolic link to it)" : " (a hard link to it)"
    return `${this.flag !== undefined ? `${this.flag} ` : ""}${this.output} is the same file as the input ${this.input}${how}: choose another output, so that the input is not overwritten`
  }
}

/** The identity of a file: device and inode. */
const same = (a: Stats, b: Stats): boolean => a.dev === b.dev && a.ino === b.ino

const statOrUndefined = (path: string): Stats | undefined => {
  try {
    return statSync(path)
  } catch {
    return undefined
  }
}

/**
 * A path's name once resolved: links followed as far as the path exists, the rest
 * lexically (`./sub/../db.msgpack` is `db.msgpack` even while `sub` does not exist,
 * although stat(2) would say ENOENT: the writer makes `sub` first).
 */
const resolvedName = (p: string): string => {
  try {
    return realpathSync(p)
  } catch {
    const abs = resolve(p)
    const dir = dirname(abs)
    return dir === abs ? abs : join(resolvedName(dir), basename(abs))
  }
}

const how = (output: string, input: string): OutputIsInput["how"] => {
  if (resolvedName(output) !== resolvedName(input)) return "hard link"
  const link = (p: string) => {
    try {
      return lstatSync(p).isSymbolicLink()
    } catch {
      return false
    }
  }
  return link(output) || link(input) ? "symbolic link" : "same path"
}

/**
 * The first of `outputs` that is the same file as one of `inputs`, with that input;
 * `undefined` when none is. The same file: the same device and inode (links followed:
 * the same path, a symbolic or a hard link), or, for an output that cannot be stat'ed
 * yet, the same name once resolved. An input that cannot be stat'ed is compared by name
 * only (its reader reports it).
 *
 * @since 0.1.0
 * @category guards
 */
export const findInputAsOutput = (
  outputs: ReadonlyArray<string>,
  inputs: ReadonlyArray<string>,
  flag?: string
): OutputIsInput | undefined => {
  if (inputs.length === 0) return undefined
  const read = inputs.map((p) => ({ path: p, stats: statOrUndefined(p), name: resolvedName(p) }))
  for (const output of outputs) {
    const s = statOrUndefined(output)
    const name = resolvedName(output)
    const hit = read.find((r) => (s !== undefined && r.stats !== undefined && same(r.stats, s)) || r.name === name)
    if (hit !== undefined) return new OutputIsInput({ output, input: hit.path, how: how(output, hit.path), flag })
  }
  return undefined
}

/**
 * Options of {@link openOutput} and the functions built on it.
 *
 * @since 0.1.0
 * @category models
 */
export interface OutputOptions {
  /** files the command reads: the output must not be one of them ({@link OutputIsInput}) */
  readonly inputs?: ReadonlyArray<string> | undefined
  /** make the output's missing folders first (`-o runs/today/report.html`) */
  readonly makeFolder?: boolean | undefined
  /** the flag that named the output, for {@link OutputIsInput}'s message */
  readonly flag?: string | undefined
}

/**
 * An output being written: its temporary file's handle. {@link OutputFile.commit} puts it
 * in place; {@link OutputFile.abort} removes it.
 *
 * @since 0.1.0
 * @category models
 */
export interface OutputFile {
  /** the output, as given */
  readonly path: string
  /** the temporary file beside it (`.NAME.tmp-PID-RANDOM`) */
  readonly temporary: string
  /** the temporary file, open for writing (for a stream: `handle.createWriteStream({ autoClose: false })`, ended before commit) */
  readonly handle: FileHandle
  /** bytes written through {@link OutputFile.write} so far */
  readonly bytes: () => number
  /** write all of `data` (strings as UTF-8), however many write(2) calls that takes */
  readonly write: (data: string | Uint8Array) => Promise<void>
  /** close, then rename over the output; rejects (and removes the temporary file) if either fails */
  readonly commit: () => Promise<void>
  /** close and remove the temporary file; idempotent, never rejects, a no-op after commit */
  readonly abort: () => Promise<void>
}

/** Temporary files not yet committed or removed: removed when the process exits (an interrupt, an error). */
const live = new Set<string>()
let hooked = false
const hookExit = () => {
  if (hooked) return
  hooked = true
  process.once("exit", () => {
    for (const t of live) {
      try {
        unlinkSync(t)
      } catch {
        // gone already
      }
    }
    live.clear()
  })
}

const code = (e: unknown): unknown => (typeof e === "object" && e !== null && "code" in e ? e.code : undefined)

/** The output's path to replace: a symbolic link's target (written through), else the path itself. */
const target = async (path: string): Promise<{ readonly path: string; readonly stats: Stats | undefined }> => {
  const s = await stat(path).catch((e: unknown) => (code(e) === "ENOENT" ? undefined : Promise.reject(e)))
  if (s === undefined) return { path, stats: undefined }
  if (s.isDirectory()) {
    throw Object.assign(new Error(`EISDIR: illegal operation on a directory, open '${path}'`), { code: "EISDIR", syscall: "open", path })
  }
  return { path: await realpath(path), stats: s }
}

/**
 * A write, close or rename error of `path` as thrown (a Node system error: code,
 * syscall), with `output: path` added: write(2)'s errors (ENOSPC, EFBIG, EIO) name no
 * file, and the caller's message should.
 */
const ofOutput = (e: unknown, path: string, temporary?: string): unknown => {
  if (typeof e !== "object" || e === null || "output" in e) return e
  // the temporary file is this module's business: a message names the output
  if (temporary !== undefined && e instanceof Error) e.message = e.message.split(temporary).join(path)
  return Object.assign(e, { output: path })
}

const random = (): string => Math.floor(Math.random() * 0x100000000).toString(36)

/**
 * Open a temporary file beside `path` for writing its new contents. Rejects with
 * {@link OutputIsInput} when `path` is one of `options.inputs`, and with the system's
 * error (EACCES, ENOENT for a missing folder unless `makeFolder`, EISDIR for a folder)
 * when the temporary file cannot be made. The caller must {@link OutputFile.commit} or
 * {@link OutputFile.abort} it (or use {@link writeOutput}).
 *
 * @since 0.1.0
 * @category encoding
 */
export const openOutput = async (path: string, options: OutputOptions = {}): Promise<OutputFile> => {
  const clash = findInputAsOutput([path], options.inputs ?? [], options.flag)
  if (clash !== undefined) throw clash
  if (options.makeFolder === true) {
    await makeDirectory(dirname(path))
    // `sub/../db.msgpack` names `db.msgpack` once `sub` exists: checked again
    const now = findInputAsOutput([path], options.inputs ?? [], options.flag)
    if (now !== undefined) throw now
  }
  const { path: final, stats } = await target(path)
  const temporary = join(dirname(final), `.${basename(final)}.tmp-${process.pid}-${random()}`)
  hookExit()
  // known before it exists: the file is on disk before `open` resolves, and a signal in
  // between ends the process with the exit hook as the only clean-up
  live.add(temporary)
  const handle = await open(temporary, "wx", 0o666).catch((e: unknown) => {
    live.delete(temporary)
    return Promise.reject(ofOutput(e, path, temporary))
  })
  let written = 0
  let state: "open" | "committed" | "aborted" = "open"
  const abort = async () => {
    if (state !== "open") return
    state = "aborted"
    await handle.close().catch(() => undefined)
    await unlink(temporary).catch(() => undefined)
    live.delete(temporary)
  }
  try {
    // an existing output keeps its permission bits (a new one gets 0666 less the umask)
    if (stats !== undefined) await chmod(temporary, stats.mode & 0o7777)
  } catch (e) {
    await abort()
    throw ofOutput(e, path, temporary)
  }
  const write = async (data: string | Uint8Array) => {
    const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data
    let at = 0
    try {
      while (at < bytes.byteLength) {
        const { bytesWritten } = await handle.write(bytes, at, bytes.byteLength - at)
        // 0 bytes would loop forever: the disk is full (write(2) says ENOSPC next time, Node may not)
        if (bytesWritten <= 0) throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC", syscall: "write" })
        at += bytesWritten
      }
    } catch (e) {
      throw ofOutput(e, path, temporary)
    }
    written += bytes.byteLength
  }
  const commit = async () => {
    if (state !== "open") throw new Error(`${path}: already ${state}`)
    try {
      await handle.close()
      await rename(temporary, final)
      state = "committed"
      live.delete(temporary)
    } catch (e) {
      await abort()
      throw ofOutput(e, path, temporary)
    }
  }
  return { path, temporary, handle, bytes: () => written, write, commit, abort }
}

/**
 * Write `path` through `f`, which gets the open {@link OutputFile} (write with its
 * `write`, or a stream over its `handle`): committed when `f` resolves, removed when it
 * rejects (the error rethrown). The output is whole or unchanged.
 *
 * @since 0.1.0
 * @category encoding
 */
export const writeOutput = async <A>(path: string, f: (out: OutputFile) => Promise<A>, options: OutputOptions = {}): Promise<A> => {
  const out = await openOutput(path, options)
  try {
    const a = await f(out)
    await out.commit()
    return a
  } catch (e) {
    await out.abort()
    throw e
  }
}

/**
 * Write `data` to `path` in one go ({@link writeOutput}): the replacement of
 * `fs.promises.writeFile` for outputs.
 *
 * @since 0.1.0
 * @category encoding
 */
export const writeOutputFile = (path: string, data: string | Uint8Array, options: OutputOptions = {}): Promise<void> =>
  writeOutput(path, (out) => out.write(data), options)
