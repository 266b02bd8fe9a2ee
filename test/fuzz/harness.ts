/**
 * The shared harness of the hostile-input tests (Readers.test.ts for .npy / Arrow,
 * Traces.test.ts for trace databases): one child process (`readerChild.ts`) with a
 * small heap that reads each case, restarted after it dies; byte mutations (flip, set,
 * int32, insert, delete, truncate) for fast-check; a scratch folder.
 *
 * `TESSERA_FUZZ_RUNS=N` runs N cases per property (default 30, kept small for
 * `npm test`); `TESSERA_FUZZ_SEED=S` replays a seed.
 */
import { fork } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as fc from "fast-check"

export const RUNS = Number(process.env["TESSERA_FUZZ_RUNS"] ?? 30)
export const SEED = process.env["TESSERA_FUZZ_SEED"] === undefined ? undefined : Number(process.env["TESSERA_FUZZ_SEED"])
export const CASE_TIMEOUT_MS = 10_000
export const HEAP_MB = 256

/** The scratch folder of this test process (`removeScratch` deletes it). */
export const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "fuzz-"))
export const removeScratch = (): void => NodeFs.rmSync(dir, { recursive: true, force: true })
let n = 0
/** Write a case into the scratch folder; returns its path. */
export const write = (name: string, bytes: Uint8Array): string => {
  const file = NodePath.join(dir, `${n++}-${name}`)
  NodeFs.writeFileSync(file, bytes)
  return file
}

/** How the child says a case ended; `detail` is the result, the error or (traces) the verdicts as JSON. */
export interface Reply {
  readonly id: number
  readonly outcome: "ok" | "typed" | "untyped"
  readonly detail: string
}

/**
 * One child process that reads the cases sent to it, restarted after it dies. Each case
 * is answered or fails on its own time bound (the child answers case by case, so a
 * silent child is a stuck case).
 */
export class Reader {
  private child: ChildProcess | undefined
  private ready: Promise<void> | undefined
  private stderr = ""
  private waiting: { id: number; resolve: (r: Reply) => void; reject: (e: Error) => void } | undefined
  private next = 0

  private start(): Promise<void> {
    this.stderr = ""
    const child = fork(new URL("./readerChild.ts", import.meta.url), [], {
      execArgv: [`--max-old-space-size=${HEAP_MB}`],
      stdio: ["ignore", "ignore", "pipe", "ipc"]
    })
    this.child = child
    child.stderr!.on("data", (d: Buffer) => {
      this.stderr = (this.stderr + d.toString()).slice(-4000)
    })
    const ready = new Promise<void>((resolve, reject) => {
      child.on("message", (r: Reply) => {
        if (r.id === -1) return resolve()
        if (this.waiting?.id === r.id) {
          const w = this.waiting
          this.waiting = undefined
          w.resolve(r)
        }
      })
      child.on("exit", (code, signal) => {
        if (this.child === child) this.child = undefined
        const e = new Error(`reader child died (exit code ${code}, signal ${signal}); stderr:\n${this.stderr}`)
        reject(e)
        const w = this.waiting
        this.waiting = undefined
        w?.reject(e)
      })
    })
    return ready
  }

  /** Read `path` in the child as a dataset (.npy / Arrow) or a trace database. */
  async read(path: string, kind: "dataset" | "trace" = "dataset"): Promise<Reply> {
    if (this.child === undefined) this.ready = this.start()
    await this.ready
    const child = this.child!
    const id = this.next++
    return new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting = undefined
        child.kill("SIGKILL")
        reject(new Error(`no answer within ${CASE_TIMEOUT_MS} ms for ${path}; stderr:\n${this.stderr}`))
      }, CASE_TIMEOUT_MS)
      this.waiting = {
        id,
        resolve: (r) => (clearTimeout(timer), resolve(r)),
        reject: (e) => (clearTimeout(timer), reject(e))
      }
      child.send({ id, path, kind })
    })
  }

  close(): void {
    this.child?.kill()
  }
}


/** A byte mutation of a valid file. */
export type Mutation =
  | { readonly kind: "flip"; readonly at: number; readonly bit: number }
  | { readonly kind: "set"; readonly at: number; readonly byte: number }
  | { readonly kind: "int32"; readonly at: number; readonly value: number }
  | { readonly kind: "insert"; readonly at: number; readonly bytes: ReadonlyArray<number> }
  | { readonly kind: "delete"; readonly at: number; readonly count: number }
  | { readonly kind: "truncate"; readonly at: number }

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant("set" as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant("int32" as const), at: fc.nat(), value: fc.constantFrom(-1, 0x7fffffff, 0x40000000, 0x10000, -0x80000000) }),
  fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), bytes: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 8 }) }),
  fc.record({ kind: fc.constant("delete" as const), at: fc.nat(), count: fc.integer({ min: 1, max: 16 }) }),
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() })
)

/** `bytes` with `mutations` applied in order (positions wrap around the length). */
export const apply = (bytes: Uint8Array, mutations: ReadonlyArray<Mutation>): Uint8Array => {
  let b = bytes.slice()
  for (const m of mutations) {
    const at = b.length === 0 ? 0 : m.at % b.length
    switch (m.kind) {
      case "flip":
        if (b.length > 0) b[at] = b[at]! ^ (1 << m.bit)
        break
      case "set":
        if (b.length > 0) b[at] = m.byte
        break
      case "int32":
        if (b.length >= 4) new DataView(b.buffer).setInt32(Math.min(at, b.length - 4), m.value, true)
        break
      case "insert":
        b = Uint8Array.from([...b.subarray(0, at), ...m.bytes, ...b.subarray(at)])
        break
      case "delete":
        b = Uint8Array.from([...b.subarray(0, at), ...b.subarray(at + m.count)])
        break
      case "truncate":
        b = b.slice(0, at)
        break
    }
  }
  return b
}
