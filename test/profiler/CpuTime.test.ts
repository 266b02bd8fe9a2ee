import assert from "node:assert/strict"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import * as Engine from "../../src/engine/Engine.ts"
import type { TaskRecord } from "../../src/engine/EngineEvents.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { FileDatabase, readPromise } from "../../src/profiler/FileDatabase.ts"
import * as MemoryDatabase from "../../src/profiler/MemoryDatabase.ts"
import * as Trace from "../../src/profiler/Trace.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-cpu-"))
after(() => rmSync(dir, { recursive: true, force: true }))
const slow = new URL("./fixtures/slow.ts", import.meta.url).href

/** `n` independent tasks, each spinning `ms` milliseconds on its worker. */
const spinning = (n: number, ms: number) =>
  TaskGraph.makeUnsafe(Array.from({ length: n }, (_, i) => ({ key: `spin-${i}`, kernel: { module: slow, name: "slow" }, args: [i, ms] })))

/** The engine's cpuTime per key, next to the Compute events a database got. */
const traced = async (workers: number, db: FileDatabase | MemoryDatabase.MemoryDatabase) => {
  const records = new Map<string, number>()
  const seen = { task: (r: TaskRecord) => void records.set(r.key, r.cpuTime) }
  await Engine.computePromise(spinning(6, 25), { workers, callbacks: [Trace.callbacks(db), seen] })
  db.close()
  const events = db instanceof FileDatabase ? (await readPromise(db.path)).events : db.list
  return { records, computes: events.filter((e) => e.name === "Compute") }
}

describe("CpuTime", () => {
  for (const [label, workers] of [["worker threads", 2], ["the sync executor", 0]] as const) {
    for (const kind of ["file", "memory"] as const) {
      it(`carries the engine's thread CPU time unchanged into Compute cpu_time (${label}, ${kind} database)`, async () => {
        const db = kind === "file" ? new FileDatabase(join(dir, `${workers}.msgpack`)) : MemoryDatabase.make()
        const { records, computes } = await traced(workers, db)
        assert.equal(computes.length, 6)
        for (const e of computes) {
          const cpu = e.args.cpu_time as number
          assert.equal(cpu, records.get(e.args.key as string), `${e.args.key}: same value as the TaskRecord`)
          // a 25 ms spin on a thread spans several scheduler ticks: never 0, never much
          // more than the task's wall time (tick-granular accounting adds at most a tick)
          assert.ok(cpu > 0, `${e.args.key}: cpu_time ${cpu}`)
          assert.ok(cpu <= e.duration! + 0.011, `${e.args.key}: cpu_time ${cpu} > duration ${e.duration}`)
        }
      })
    }
  }
})
