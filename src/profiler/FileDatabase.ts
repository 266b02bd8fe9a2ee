/**
 * FileDatabase: DASF's on-disk trace database, both ways. A file is a sequence of
 * records, each an 8-byte big-endian length and one msgpack map (src/trace/TraceFormat).
 *
 * Creating: `open()` opens (creates) the file now and says how many bytes it already
 * held; without it the file is opened by the first commit that has events. An existing
 * file is appended to, as DASF does, unless `overwrite` (or DASF's
 * `removeOldOutputFile`) is set, which truncates it when it is opened. `openWarning`
 * is the one line the profiler layers print when they append to a non-empty file.
 *
 * Writing: `record` encodes the event at once into the database's buffer (specialised
 * encoder, the same bytes as `TraceFormat.encodeRecords`); every `commitThreshold`
 * events (default 5000, as DASF), and at the latest `commitInterval` seconds (default
 * 1) after the first event of a batch, the buffered batch is appended with ONE
 * `fs.writeSync` on a descriptor opened with `O_APPEND`. Batches are also flushed on
 * `close`, at process exit, on SIGINT/SIGTERM and on an uncaught exception
 * (internal/exitFlush), so a SIGKILL loses at most the last `commitInterval` seconds (a
 * slow sampler, 10 events a second, would otherwise hold 8 minutes of samples in memory).
 *
 * Several writers, one file: each thread (or process) opens its own `FileDatabase` on the
 * same path. `O_APPEND` makes each `write(2)` land atomically at the end of the file, and
 * a batch is one write of whole records, so records from different writers never
 * interleave (Linux serialises writes to a regular file under the inode lock). A short
 * write (disk full, a signal) is completed by further writes; that is the one case where
 * another writer could slip in between, and it is reported by readers as a bad record.
 *
 * One writer per database (issue 32 item 2): with `lock` (the profiler layers set it), `open`
 * first takes `{path}.lock` (internal/databaseLock), so a second run with the same profile
 * name fails at once with `Locked`, naming the process that writes the file (pid, host,
 * start time, command) — before anything is truncated: `overwrite` never destroys a file
 * another live process writes. The lock goes with `close`, at exit and on SIGINT/SIGTERM;
 * one left by a dead process (SIGKILL) is taken over with a warning.
 *
 * A failed write (issue 32 item 3: a full disk, an I/O error) throws `WriteFailed`, or,
 * with `stopOnWriteError` (the profiler layers set it), stops this database instead: the
 * whole records of the failed write stay and a torn last one is cut off (the file ends at
 * a record boundary, when no other writer appended meanwhile), one warning through `warn`
 * names the file, the bytes and events it keeps and what is lost, and every later record
 * is dropped without a word. The profiled program never sees the failure.
 *
 * Reading: `read` / `events` stream the file read-only (flag "r": never creates or
 * modifies it), decode with a specialised decoder (falling back to the generic one for
 * unusual records and for errors), recover every whole record before a truncated tail
 * and report the dropped bytes. Errors are `TraceFormatError` naming file and offset.
 *
 * @since 0.1.0
 */
import { closeSync, constants, fstatSync, ftruncateSync, openSync, writeSync } from "node:fs"
import { Effect, type Scope } from "effect"
import { type DriverRecord, isDriverRecord, isTaskRecord, type MemoryRecord, type TaskRecord } from "../engine/EngineEvents.ts"
import type { TraceEvent } from "../trace/TraceEvent.ts"
import * as TraceFormat from "../trace/TraceFormat.ts"
import * as TraceFormatError from "../trace/TraceFormatError.ts"
import * as TraceReader from "../trace/TraceReader.ts"
import { RecordEncoder } from "../trace/TraceWriter.ts"
import { attempt, type DatabaseError, databaseError, type EventDatabase, type RecordSink } from "./EventDatabase.ts"
import * as DatabaseLock from "./internal/databaseLock.ts"
import { registerFlush } from "./internal/exitFlush.ts"

/**
 * Options of a writing `FileDatabase`.
 *
 * @since 0.1.0
 * @category models
 */
export interface FileDatabaseOptions {
  /** events buffered before a batch is written (default 5000) */
  readonly commitThreshold?: number
  /**
   * seconds after the first buffered event by which the batch is written even if it is
   * smaller than `commitThreshold` (default 1; 0: only by count). A timer, armed once per
   * batch and never keeping the process alive, so recording costs nothing more.
   */
  readonly commitInterval?: number
  /**
   * truncate an existing file when it is opened (by `open()` or the first write) instead
   * of appending to it (default false)
   */
  readonly overwrite?: boolean
  /** DASF's name for `overwrite` (either one truncates) */
  readonly removeOldOutputFile?: boolean
  /**
   * take the lock file `{path}.lock` before the file is opened (default false; the
   * profiler layers set it): a live writer of the file fails `open` with `Locked`
   */
  readonly lock?: boolean
  /**
   * a failed write stops this database (one warning, later records dropped) instead of
   * throwing `WriteFailed` (default false; the profiler layers set it)
   */
  readonly stopOnWriteError?: boolean
  /** where this database's warnings go: a stale lock taken over, a write that stopped it (default a line on stderr) */
  readonly warn?: (line: string) => void
}

/**
 * Default batch size, as DASF.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultCommitThreshold = 5000

/**
 * Default time bound of a batch, in seconds: a SIGKILL loses at most this much.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultCommitInterval = 1

/**
 * A trace database file. Constructing one touches nothing; the file is opened (created
 * when missing) by `open()`, or else by the first commit that has events to write.
 *
 * @since 0.1.0
 * @category models
 */
export class FileDatabase implements EventDatabase {
  readonly path: string
  readonly label: string
  readonly commitThreshold: number
  private readonly truncate: boolean
  private readonly locking: boolean
  private readonly stopOnWriteError: boolean
  private readonly warn: (line: string) => void
  private lock: DatabaseLock.Lock | undefined = undefined
  /** why the database stopped writing (`stopOnWriteError`), once it has */
  private stoppedBy: DatabaseError | undefined = undefined
  /** events dropped since the database stopped */
  private droppedEvents = 0
  /** encoded records not yet written (`pendingEvents` of them) */
  private readonly encoder = new RecordEncoder()
  private pendingEvents = 0
  private fd = -1
  private heldBefore = 0
  private closed = false
  private unregister: (() => void) | null = null
  private readonly commitMs: number
  private timer: ReturnType<typeof setTimeout> | undefined = undefined
  /** a timed commit's failure, thrown by the next call (a timer has nobody to throw to) */
  private deferred: DatabaseError | undefined = undefined
  /** events written to the file by this writer */
  written = 0

  constructor(path: string, options: FileDatabaseOptions = {}) {
    const t = options.commitThreshold ?? defaultCommitThreshold
    if (!Number.isInteger(t) || t < 1) {
      throw databaseError(path, "InvalidOption", `commitThreshold must be a positive integer, got ${t}`)
    }
    this.path = path
    this.label = path
    this.commitThreshold = t
    const interval = options.commitInterval ?? defaultCommitInterval
    if (!(interval >= 0) || !Number.isFinite(interval)) {
      throw databaseError(path, "InvalidOption", `commitInterval must be a finite number of seconds >= 0, got ${interval}`)
    }
    this.commitMs = interval * 1000
    this.truncate = options.overwrite === true || options.removeOldOutputFile === true
    this.locking = options.lock === true
    this.stopOnWriteError = options.stopOnWriteError === true
    this.warn = options.warn ?? defaultWarn
  }

  /**
   * Opens the file now: creates it when missing, truncates it with `overwrite`, else
   * appends to it. Returns the bytes the file held before this writer opened it (0 when
   * it was created or truncated). Idempotent (later calls return the same number).
   * Throws `DatabaseError` (`OpenFailed`, `Locked` with `lock`, or `Closed` after close).
   */
  readonly open = (): number => {
    if (this.fd >= 0) return this.heldBefore
    if (this.closed) throw databaseError(this.path, "Closed", "open after close")
    // the lock first: a file another live run writes is neither truncated nor appended to
    if (this.locking && this.lock === undefined) this.lock = DatabaseLock.acquire(this.path, this.warn)
    try {
      // O_APPEND both ways ("w" alone is not): another writer of the same file (a
      // cluster worker on this host) appends too, and no write lands at a stale offset
      this.fd = openSync(this.path, this.truncate ? truncateAppend : "a")
    } catch (e) {
      this.releaseLock()
      throw databaseError(this.path, "OpenFailed", errorText(e))
    }
    try {
      this.heldBefore = this.truncate ? 0 : fstatSync(this.fd).size
    } catch {
      this.heldBefore = 0
    }
    return this.heldBefore
  }

  /** Buffers one event; writes the batch when it reaches the threshold. */
  readonly record = (event: TraceEvent): void => {
    if (this.closed) {
      throw databaseError(this.path, "Closed", `record "${event.name}" after close`)
    }
    if (this.stoppedBy !== undefined) {
      this.droppedEvents++
      return
    }
    if (this.unregister === null) this.unregister = registerFlush(this.flushAtExit)
    // encode now (not at commit): the event object dies young, and a flush at exit or on
    // a signal only has to write bytes
    const at = this.encoder.pos
    try {
      this.encoder.event(event)
    } catch (e) {
      this.encoder.pos = at
      throw databaseError(this.path, "InvalidEvent", `event "${event.name}" cannot be encoded: ${errorText(e)}`)
    }
    if (++this.pendingEvents >= this.commitThreshold) this.commit()
    else if (this.pendingEvents === 1) this.arm()
  }

  /**
   * Records the Trace layer's `Compute` event of a task without building the event
   * object (same bytes as `record(Trace.computeEvent(r))`).
   */
  readonly recordTask = (r: TaskRecord): void => this.append(r)

  /** Records the Trace layer's `Managed Memory` event (same bytes as `record(Trace.memoryEvent(m))`). */
  readonly recordMemory = (m: MemoryRecord): void => this.append(m)

  /** Records the Trace layer's `Driver` event of a driver segment (same bytes as `record(Trace.driverEvent(d))`). */
  readonly recordDriver = (d: DriverRecord): void => this.append(d)

  /** The engine records' fast path (EventDatabase's `records`): `recordTask`, `recordMemory` and `recordDriver`. */
  readonly records: RecordSink = { task: this.recordTask, memory: this.recordMemory, driver: this.recordDriver }

  // the fast paths: a method, not a closure per record (this runs per task)
  private append(x: TaskRecord | MemoryRecord | DriverRecord): void {
    if (this.closed) {
      throw databaseError(this.path, "Closed", `record "${x.key}" after close`)
    }
    if (this.stoppedBy !== undefined) {
      this.droppedEvents++
      return
    }
    if (this.unregister === null) this.unregister = registerFlush(this.flushAtExit)
    const at = this.encoder.pos
    try {
      if (isTaskRecord(x)) this.encoder.compute(x)
      else if (isDriverRecord(x)) this.encoder.driver(x)
      else this.encoder.memory(x)
    } catch (e) {
      this.encoder.pos = at
      throw databaseError(this.path, "InvalidEvent", `"${x.key}" cannot be encoded: ${errorText(e)}`)
    }
    if (++this.pendingEvents >= this.commitThreshold) this.commit()
    else if (this.pendingEvents === 1) this.arm()
  }

  /** Writes the batch `commitInterval` after its first event, unless it was written before. */
  private arm(): void {
    if (this.commitMs === 0 || this.timer !== undefined) return
    this.timer = setTimeout(this.timedCommit, this.commitMs)
    this.timer.unref()
  }

  private readonly timedCommit = (): void => {
    this.timer = undefined
    if (this.closed) return
    try {
      this.commit()
    } catch (e) {
      this.deferred = e as DatabaseError
    }
  }

  private throwDeferred(): void {
    const e = this.deferred
    if (e === undefined) return
    this.deferred = undefined
    throw e
  }

  /** Events recorded but not yet written. */
  get pendingCount(): number {
    return this.pendingEvents
  }

  /** Why the database stopped writing (`stopOnWriteError`: the failed write), or undefined. */
  get stopped(): DatabaseError | undefined {
    return this.stoppedBy
  }

  /** Events recorded or pending when the database stopped, and dropped (0 while it writes). */
  get dropped(): number {
    return this.droppedEvents
  }

  /** Appends every buffered event to the file in one write. Throws `DatabaseError`. */
  readonly commit = (): void => {
    if (this.timer !== undefined) {
      clearTimeout(this.timer)
      this.timer = undefined
    }
    this.throwDeferred()
    const count = this.pendingEvents
    if (count === 0) return
    if (this.fd < 0) this.open()
    const bytes = this.encoder.buf.subarray(0, this.encoder.pos)
    // where the batch starts, so that a failed write can be cut back to whole records
    let before = -1
    if (this.stopOnWriteError) {
      try {
        before = fstatSync(this.fd).size
      } catch {
        // unknown: a torn record is left to the readers' tail recovery
      }
    }
    let off = 0
    try {
      while (off < bytes.length) off += writeSync(this.fd, bytes, off, bytes.length - off)
    } catch (e) {
      const error = databaseError(this.path, "WriteFailed", `${errorText(e)} after ${off} of ${bytes.length} bytes of a ${count}-event batch`)
      if (!this.stopOnWriteError) throw error
      this.stop(error, e, bytes, off, before, count)
      return
    }
    this.written += count
    this.pendingEvents = 0
    this.encoder.pos = 0
    this.encoder.shrink()
  }

  /**
   * Stops writing after a failed write of `off` of `bytes` (a batch of `count` events,
   * appended at file offset `before`, -1 when unknown): keeps its whole records, cuts a
   * torn last one, warns once, drops the rest.
   */
  private stop(error: DatabaseError, cause: unknown, bytes: Uint8Array, off: number, before: number, count: number): void {
    // the whole records among the bytes written
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    let whole = 0, records = 0
    while (whole + 8 <= off) {
      const next = whole + 8 + Number(view.getBigUint64(whole))
      if (next > off) break
      whole = next
      records++
    }
    let kept = -1
    let torn = off > whole
    try {
      const size = fstatSync(this.fd).size
      kept = size
      // cut the torn record only when the file's tail is this write's (no other writer appended)
      if (torn && before >= 0 && size === before + off) {
        ftruncateSync(this.fd, before + whole)
        kept = before + whole
        torn = false
      }
    } catch {
      // the size is unknown; readers drop a torn tail
    }
    this.written += records
    this.droppedEvents += count - records
    this.pendingEvents = 0
    this.encoder.pos = 0
    this.encoder.release()
    this.stoppedBy = error
    const size = kept >= 0 ? `${kept} bytes` : "what it held"
    this.warn(
      `warning: ${this.path}: writing failed (${errorText(cause)}); this profiler stopped writing it and the run goes on. ` +
        `The file keeps ${size}, readable, with the first ${this.written} events this profiler wrote` +
        `${torn ? " (its torn last record is skipped by readers)" : ""}; ${count - records} events of the failed write and all later ones are lost.`
    )
  }

  private releaseLock(): void {
    const lock = this.lock
    this.lock = undefined
    lock?.release()
  }

  private readonly flushAtExit = (): void => {
    if (!this.closed) this.commit()
  }

  /** Commits and closes the file. Idempotent. */
  readonly close = (): void => {
    if (this.closed) return
    try {
      this.commit()
    } finally {
      this.closed = true
      if (this.unregister !== null) this.unregister()
      this.unregister = null
      try {
        if (this.fd >= 0) closeSync(this.fd)
      } finally {
        this.fd = -1
        this.releaseLock()
      }
      // everything is written (or the write failed and threw): the bytes are not needed
      this.encoder.release()
    }
  }

  /** Commits what is buffered, then streams the file's events. */
  readonly events = (): AsyncIterable<TraceEvent> => {
    if (!this.closed) this.commit()
    return streamEvents(this.path)
  }
}

/** "w" with O_APPEND: create or truncate, then every write at the end of the file. */
const truncateAppend = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_APPEND

const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/**
 * The warning printed when a profiler appends to a database that already holds events.
 *
 * @since 0.1.0
 * @category constructors
 */
export const openWarning = (path: string, bytes: number): string =>
  `warning: ${path} already holds ${bytes} bytes of trace events; appending to it (as DASF does). ` +
  `Pass overwrite: true (tessera --overwrite) to replace it, or use another profile name.`

/**
 * Where profiler warnings go by default: one line on stderr.
 *
 * @since 0.1.0
 * @category constructors
 */
export const defaultWarn = (line: string): void => {
  process.stderr.write(line + "\n")
}

/**
 * Opens `db` now (see `FileDatabase.open`) and, when it already held bytes and is being
 * appended to, passes `openWarning` to `warn`. Throws `DatabaseError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const openAnnounced = (db: FileDatabase, warn: (line: string) => void = defaultWarn): void => {
  const held = db.open()
  if (held > 0) warn(openWarning(db.path, held))
}

/**
 * A writing database as a scoped resource: closed (flushed) when the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  path: string,
  options: FileDatabaseOptions = {}
): Effect.Effect<FileDatabase, DatabaseError, Scope.Scope> =>
  Effect.acquireRelease(
    attempt(() => new FileDatabase(path, options)),
    (db) => Effect.sync(() => db.close())
  )

/**
 * Streams a database file's events in batches (read-only). Rejects with
 * `TraceFormatError`. Returns the stream summary (bytes, dropped bytes).
 *
 * @since 0.1.0
 * @category encoding
 */
export async function* streamBatches(
  file: string,
  options?: { readonly chunkBytes?: number }
): AsyncGenerator<Array<TraceEvent>, TraceFormat.StreamSummary, undefined> {
  const decoder = new TraceReader.EventDecoder()
  const frames = TraceFormat.streamFrames(file, options)
  for (;;) {
    const next = await frames.next()
    if (next.done === true) return next.value
    const out: Array<TraceEvent> = []
    decoder.decodeFrames(next.value.bytes, next.value.end, file, next.value.fileOffset, out)
    yield out
  }
}

/**
 * Streams a database file's events one by one (read-only).
 *
 * @since 0.1.0
 * @category encoding
 */
export async function* streamEvents(file: string): AsyncGenerator<TraceEvent, void, undefined> {
  for await (const batch of streamBatches(file)) yield* batch
}

/**
 * Reads a whole database file (read-only): its events, size and dropped tail bytes.
 * Rejects with `TraceFormatError`.
 *
 * @since 0.1.0
 * @category encoding
 */
export const readPromise = async (
  file: string,
  options?: { readonly chunkBytes?: number }
): Promise<TraceFormat.DecodedTrace> => {
  const events: Array<TraceEvent> = []
  const it = streamBatches(file, options)
  for (;;) {
    const next = await it.next()
    if (next.done === true) return { file, events, bytes: next.value.bytes, droppedBytes: next.value.droppedBytes }
    for (const e of next.value) events.push(e)
  }
}

/**
 * Reads a whole database file (read-only).
 *
 * @since 0.1.0
 * @category encoding
 */
export const read = (file: string): Effect.Effect<TraceFormat.DecodedTrace, TraceFormat.TraceFormatError> =>
  Effect.tryPromise({
    try: () => readPromise(file),
    catch: (e) =>
      TraceFormatError.fromUnknown(e, file)
  })

/**
 * Decodes a whole database held in memory (fast decoder). Throws `TraceFormatError`.
 *
 * @since 0.1.0
 * @category encoding
 */
export const decodeUnsafe = (bytes: Uint8Array, file = "<buffer>"): TraceFormat.DecodedTrace => {
  const events: Array<TraceEvent> = []
  const stop = TraceFormat.scanFramesUnsafe(bytes, file, 0, () => undefined)
  new TraceReader.EventDecoder().decodeFrames(bytes, stop, file, 0, events)
  TraceFormat.checkTailUnsafe(bytes.subarray(stop), file, stop)
  return { file, events, bytes: bytes.length, droppedBytes: bytes.length - stop }
}
