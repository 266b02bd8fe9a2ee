/**
 * Rules on hand-made traces with a known answer: `worker-lost` (a worker's thread started
 * again mid-run) and its absence on a pool's first start-ups; `scheduling-latency` on a
 * chain whose hand-overs stall, of high severity where the tasks had their cores and at
 * most medium, saying so, where other processes held them (the tasks got a fifth of a
 * core).
 *
 * @since 0.1.0
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { diagnoseTables } from "../../src/analysis/Diagnose.ts"
import { loadBytesUnsafe } from "../../src/analysis/Load.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"

const t0 = 1.7e9
const task = (key: string, worker: string, start: number, duration: number, cpu: number, deps: ReadonlyArray<string> = []): TraceEvent => ({
  name: "Compute",
  timestamp: t0 + start + duration,
  phase: "X",
  process_id: "h",
  thread_id: worker,
  duration,
  args: { key, name: "work", state: "memory", size: 8, dependencies: deps, dependents: [], stage: "work", cpu_time: cpu }
})
const driver = (key: string, activity: string, thread: string, start: number, end: number, compute = 1): TraceEvent => ({
  name: "Driver",
  timestamp: t0 + end,
  phase: "X",
  process_id: "h",
  thread_id: thread,
  duration: end - start,
  args: { key, activity, compute, dependencies: [], tasks: 0 }
})
const tables = (events: ReadonlyArray<TraceEvent>) => loadBytesUnsafe([{ file: "made.msgpack", bytes: encodeRecords([...events].sort((a, b) => a.timestamp - b.timestamp)) }])

describe("issue 35: rules on hand-made traces", () => {
  // two workers start, then run 10 tasks of 0.1 s each; with `lost`, worker-1 dies after
  // its second task (at 0.4 s) and its replacement starts 0.5 s later
  const run = (lost: boolean): Array<TraceEvent> => {
    const events: Array<TraceEvent> = [
      driver("d-0", "setup", "driver", 0, 0.01),
      driver("d-1", "worker start", "worker-h-0", 0.01, 0.2),
      driver("d-2", "worker start", "worker-h-1", 0.01, 0.2),
      driver("d-3", "submit", "driver", 0.2, 0.2)
    ]
    let w0 = 0.2
    let w1 = 0.2
    for (let i = 0; i < 10; i++) {
      const onW1 = i % 2 === 1 && !(lost && i >= 5 && i < 9)
      if (onW1 && lost && i === 9) w1 = Math.max(w1, 1.0) // replaced at 1.0
      const start = onW1 ? w1 : w0
      events.push(task(`('work-1', ${i})`, onW1 ? "worker-h-1" : "worker-h-0", start, 0.1, 0.095))
      if (onW1) w1 = start + 0.1
      else w0 = start + 0.1
    }
    if (lost) events.push(driver("d-4", "worker start", "worker-h-1", 0.5, 1.0))
    const end = Math.max(w0, w1)
    events.push(driver("d-5", "wait", "driver", 0.2, end))
    return events
  }

  it("issue 35: a worker started again mid-run is worker-lost, naming it and the time it was gone; first start-ups are not", () => {
    const lost = diagnoseTables(tables(run(true))).findings.find((f) => f.rule === "worker-lost")
    assert.ok(lost !== undefined)
    assert.equal(lost.evidence.worker, "worker-h-1")
    // gone from its last task's end (0.4 s) to its replacement ready (1.0 s): 600 ms, over 2 workers
    assert.match(lost.message, /^worker worker-h-1 died and was replaced: 600 ms without it/)
    assert.ok(Math.abs(lost.saving.seconds - 0.3) < 1e-6, String(lost.saving.seconds))
    assert.ok(Math.abs(lost.evidence.start - 0.4) < 1e-6 && Math.abs(lost.evidence.end - 1.0) < 1e-6, JSON.stringify(lost.evidence))
    assert.ok(!diagnoseTables(tables(run(false))).findings.some((f) => f.rule === "worker-lost"))
    // a pool started before the profiler: no first start-ups in the trace, and the worker
    // died on its first task; its replacement's start-up began mid-run (0.5 s, ready at 1.0 s)
    const shared: Array<TraceEvent> = [driver("d-0", "submit", "driver", 0, 0.01)]
    for (let i = 0; i < 8; i++) shared.push(task(`('work-1', ${i})`, "worker-h-0", 0.01 + 0.1 * i, 0.1, 0.095))
    shared.push(driver("d-1", "worker start", "worker-h-1", 0.5, 1.0))
    for (let i = 8; i < 10; i++) shared.push(task(`('work-1', ${i})`, "worker-h-1", 1.0 + 0.1 * (i - 8), 0.1, 0.095))
    shared.push(driver("d-2", "wait", "driver", 0.01, 1.2))
    const replaced = diagnoseTables(tables(shared)).findings.find((f) => f.rule === "worker-lost")
    assert.ok(replaced !== undefined)
    assert.match(replaced.message, /^worker worker-h-1 died and was replaced: 500 ms without it/)
  })

  // 12 tasks of 10 ms on two workers, one of them 40 ms: first on its worker or not, and
  // its extra 30 ms on the CPU (compiling its kernel) or off it (waiting)
  const slowOne = (at: number, extraCpu: boolean): Array<TraceEvent> => {
    const events: Array<TraceEvent> = []
    const free = [0, 0]
    for (let i = 0; i < 12; i++) {
      const w = i % 2
      const d = i === at ? 0.04 : 0.01
      events.push(task(`('s-1', ${i})`, `worker-h-${w}`, free[w]!, d, i === at && extraCpu ? 0.0395 : 0.0095))
      free[w]! += d + 0.0002
    }
    return events
  }

  it("issue 35: a worker's first task, slower by CPU time of compiling its kernel, is warm-up; later, or waiting, a straggler", () => {
    const straggles = (events: ReadonlyArray<TraceEvent>) => diagnoseTables(tables(events)).findings.some((f) => f.rule === "straggler")
    assert.equal(straggles(slowOne(0, true)), false, "first on worker-h-0, 30 ms more CPU: warm-up")
    assert.equal(straggles(slowOne(4, true)), true, "third on worker-h-0: a straggler")
    assert.equal(straggles(slowOne(0, false)), true, "first, but waiting: a straggler")
    // the bar is an option: with none, the first task is a straggler too
    assert.ok(diagnoseTables(tables(slowOne(0, true)), { thresholds: { warmupSeconds: 0 } }).findings.some((f) => f.rule === "straggler"))
  })

  // a chain of 40 tasks of 2 ms on one worker, each needing the one before, handed over
  // in 1 ms, every fourth in 30 ms (stalls); `cpuShare`: the tasks' CPU time over their duration
  const chain = (cpuShare: number): Array<TraceEvent> => {
    const events: Array<TraceEvent> = []
    let t = 0
    for (let i = 0; i < 40; i++) {
      events.push(task(`('c-1', ${i})`, "worker-h-0", t, 0.002, 0.002 * cpuShare, i > 0 ? [`('c-1', ${i - 1})`] : []))
      t += 0.002 + (i % 4 === 3 ? 0.03 : 0.001)
    }
    return events
  }

  it("issue 35: stalled hand-overs are scheduling-latency; where the tasks got a fifth of a core, the machine's, at most medium", () => {
    const own = diagnoseTables(tables(chain(0.95))).findings.find((f) => f.rule === "scheduling-latency")
    assert.ok(own !== undefined)
    // 9 stalls of 30 ms over a usual 1 ms: 261 ms of the 0.41 s run
    assert.ok(Math.abs(own.saving.seconds - 9 * 0.029) < 1e-6, String(own.saving.seconds))
    assert.equal(own.severity, "high")
    assert.doesNotMatch(own.message, /other processes/)
    const busy = diagnoseTables(tables(chain(0.2))).findings.find((f) => f.rule === "scheduling-latency")
    assert.ok(busy !== undefined)
    assert.equal(busy.severity, "medium")
    assert.match(busy.message, /the tasks themselves got 20% of a core \(median\): other processes held the machine's cores/)
    assert.match(busy.fix, /the machine was busy/)
  })
})
