/**
 * One writer per database (issue 32 item 2): a profiler layer that writes `{file}` first
 * takes `{file}.lock`, a small JSON file naming its process (pid, host, start time,
 * command). It is made complete beside the lock and hard-linked into place, so the
 * creation is exclusive (`link(2)` fails with EEXIST) and a lock file is never seen half
 * written.
 *
 * - A lock held by a live process refuses the second writer at once with `Locked`, a
 *   sentence naming that process — whether or not it truncates (`--overwrite` never
 *   destroys a file another live process writes). Another profiler of this process
 *   writing the same file is refused too.
 * - A lock left by a dead process (same host; its pid not running, or running but started
 *   after the lock was taken: a reused pid, read from /proc on Linux) is taken over, with
 *   one warning. A lock of another host cannot be checked from here: refused, saying so
 *   and which file to remove if that process is gone. An unreadable lock is taken over.
 * - Released (removed, when it is still this process's) by `release`, at exit and on
 *   SIGINT/SIGTERM (internal/exitFlush); a SIGKILL leaves it, for the next run to take over.
 * - Where the lock cannot be made (a missing folder, no permission, a full disk) the
 *   database goes on without one: the open that follows reports a folder or permission
 *   problem; for anything else one warning says the file is not locked.
 *
 * Leaves out: a cluster's other hosts (their workers write their own hosts' files,
 * unlocked: they belong to the run whose driver holds its host's locks).
 *
 * @since 0.1.0
 * @internal
 */
import { linkSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs"
import { hostname } from "node:os"
import { basename } from "node:path"
import { randomBytes } from "node:crypto"
import { databaseError, isDatabaseError } from "../EventDatabase.ts"
import { registerFinal } from "./exitFlush.ts"

/**
 * What a lock file holds.
 *
 * @since 0.1.0
 * @internal
 */
export interface Holder {
  readonly pid: number
  readonly host: string
  /** when the lock was taken, epoch milliseconds */
  readonly started: number
  /** the command line, shortened */
  readonly command: string
  /** tells this lock from another of the same process */
  readonly nonce: string
}

/**
 * A held lock.
 *
 * @since 0.1.0
 * @internal
 */
export interface Lock {
  /** the lock file */
  readonly path: string
  /** Removes the lock file when it is still this lock's. Idempotent. */
  readonly release: () => void
}

/** locks this process holds, by lock path */
const held = new Map<string, Holder>()

const errno = (e: unknown): string => (e as { code?: string }).code ?? ""

const commandLine = (): string => {
  const args = process.argv.slice(2).map((a) => (/\s/.test(a) ? JSON.stringify(a) : a))
  const main = process.argv[1] !== undefined ? basename(process.argv[1]) : "node"
  const line = [main === "main.ts" || main === "main.js" || main === "tessera" ? "tessera" : main, ...args].join(" ")
  return line.length > 160 ? line.slice(0, 157) + "..." : line
}

const parse = (text: string): Holder | undefined => {
  try {
    const h = JSON.parse(text) as Partial<Holder>
    if (typeof h.pid !== "number" || typeof h.host !== "string" || typeof h.started !== "number") return undefined
    return { pid: h.pid, host: h.host, started: h.started, command: typeof h.command === "string" ? h.command : "", nonce: typeof h.nonce === "string" ? h.nonce : "" }
  } catch {
    return undefined
  }
}

const readHolder = (path: string): { text: string; holder: Holder | undefined } | undefined => {
  try {
    const text = readFileSync(path, "utf8")
    return { text, holder: parse(text) }
  } catch (e) {
    if (errno(e) === "ENOENT") return undefined
    return { text: "", holder: undefined }
  }
}

/** When process `pid` started, epoch milliseconds (Linux /proc), or undefined. */
const processStart = (pid: number): number | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // the fields after the command (which may hold spaces and parentheses)
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    const ticks = Number(fields[19])
    const btime = /^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"))
    if (!Number.isFinite(ticks) || btime === null) return undefined
    // USER_HZ is 100 on every Linux Node runs on
    return (Number(btime[1]) + ticks / 100) * 1000
  } catch {
    return undefined
  }
}

/** Whether the lock's process still runs (same host only). */
const alive = (h: Holder): boolean => {
  if (h.pid === process.pid) return [...held.values()].some((x) => x.nonce === h.nonce)
  try {
    process.kill(h.pid, 0)
  } catch (e) {
    // EPERM: it exists, as another user's
    if (errno(e) !== "EPERM") return false
  }
  // a pid reused by a process started after the lock was taken (2 s: btime's rounding)
  const start = processStart(h.pid)
  return start === undefined || start <= h.started + 2000
}

const when = (ms: number): string => new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC")

/**
 * Who holds a lock, as words: `pid 123 on host vm, started 2026-12-02 05:03:15 UTC (tessera demo --profile same)`.
 *
 * @since 0.1.0
 * @internal
 */
export const describeHolder = (h: Holder): string =>
  `pid ${h.pid} on host ${h.host}, started ${when(h.started)}${h.command !== "" ? ` (${h.command})` : ""}`

/**
 * Takes `{file}.lock` for `file`, or throws `DatabaseError` (`Locked`) naming the live
 * process that holds it. `warn` gets the one line of a stale lock taken over, or of a
 * lock that could not be made. Returns undefined when the database goes unlocked.
 *
 * @since 0.1.0
 * @internal
 */
export const acquire = (file: string, warn: (line: string) => void): Lock | undefined => {
  const path = `${file}.lock`
  const host = hostname()
  const me: Holder = { pid: process.pid, host, started: Date.now(), command: commandLine(), nonce: randomBytes(8).toString("hex") }
  const text = JSON.stringify(me) + "\n"
  const tmp = `${path}.${process.pid}.${me.nonce}.tmp`
  try {
    writeFileSync(tmp, text, { flag: "wx" })
  } catch (e) {
    const code = errno(e)
    // the database's own open says what is wrong with the folder
    if (!["ENOENT", "ENOTDIR", "EACCES", "EPERM", "EROFS"].includes(code)) {
      warn(`warning: ${file}: cannot make its lock file ${path} (${e instanceof Error ? e.message : String(e)}); writing it without one (another run with the same name would not be stopped)`)
    }
    try {
      unlinkSync(tmp)
    } catch {
      // never made
    }
    return undefined
  }
  try {
    for (let attempt = 0; attempt < 20; attempt++) {
      try {
        linkSync(tmp, path)
        return hold(path, me)
      } catch (e) {
        if (errno(e) !== "EEXIST") {
          warn(`warning: ${file}: cannot make its lock file ${path} (${e instanceof Error ? e.message : String(e)}); writing it without one`)
          return undefined
        }
      }
      const seen = readHolder(path)
      if (seen === undefined) continue // released meanwhile: try again
      const h = seen.holder
      if (h !== undefined && h.host !== host) {
        throw databaseError(
          file,
          "Locked",
          `another run writes this database: ${describeHolder(h)} (its lock ${path}); a process on another host cannot be checked from here: ` +
            `use another profile name, or remove the lock file if that run is over`
        )
      }
      if (h !== undefined && alive(h)) {
        const self = h.pid === process.pid ? " (this process: another profiler writes the same file)" : ""
        throw databaseError(
          file,
          "Locked",
          `another run writes this database: ${describeHolder(h)}${self}; wait for it to end or use another profile name ` +
            `(--overwrite does not replace a file a live run writes)`
        )
      }
      // stale: its process is gone. Replace it only if it is still the one read (another
      // run taking it over at the same moment wins the race, and is then a live holder)
      const again = readHolder(path)
      if (again === undefined || again.text !== seen.text) continue
      renameSync(tmp, path)
      const mine = readHolder(path)
      if (mine?.holder?.nonce !== me.nonce) {
        writeFileSync(tmp, text, { flag: "wx" })
        continue
      }
      warn(
        h === undefined
          ? `warning: ${path} is unreadable (not a lock of this version); taking it over`
          : `warning: ${path} was left by ${describeHolder(h)}, which is no longer running; taking the lock over`
      )
      return hold(path, me)
    }
    throw databaseError(file, "Locked", `its lock ${path} keeps changing hands; another run is starting with the same name`)
  } catch (e) {
    if (isDatabaseError(e)) throw e
    // an unexpected file-system error (a lock that cannot be read or replaced)
    warn(`warning: ${file}: cannot take its lock file ${path} (${e instanceof Error ? e.message : String(e)}); writing it without one`)
    return undefined
  } finally {
    try {
      unlinkSync(tmp)
    } catch {
      // linked or renamed into place
    }
  }
}

const hold = (path: string, me: Holder): Lock => {
  held.set(path, me)
  let released = false
  const release = (): void => {
    if (released) return
    released = true
    unregister()
    if (held.get(path)?.nonce === me.nonce) held.delete(path)
    // only ours: a lock taken over by another run (ours judged stale) is theirs
    if (readHolder(path)?.holder?.nonce === me.nonce) {
      try {
        unlinkSync(path)
      } catch {
        // gone already
      }
    }
  }
  const unregister = registerFinal(release)
  return { path, release }
}

/**
 * The holder of `file`'s lock, when one is there (live or not).
 *
 * @since 0.1.0
 * @internal
 */
export const holderOf = (file: string): Holder | undefined => readHolder(`${file}.lock`)?.holder
