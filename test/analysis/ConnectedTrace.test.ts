import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { Effect, type Layer } from "effect"
import * as fc from "fast-check"
import * as A from "../../src/analysis/Analysis.ts"
import type { CriticalStep } from "../../src/analysis/CriticalPath.ts"
import * as CA from "../../src/dsl/ChunkedArray.ts"
import { makeBlobs } from "../../src/dsl/Datasets.ts"
import * as Elementwise from "../../src/dsl/Elementwise.ts"
import * as Reductions from "../../src/dsl/Reductions.ts"
import * as Tutorial5 from "../../examples/tutorial5/Tutorial5.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as MemoryDatabase from "../../src/profiler/MemoryDatabase.ts"
import * as Trace from "../../src/profiler/Trace.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"

const EPS = 1e-3

/** Runs `program` under a Trace layer writing into memory; the loaded tables. */
const traced = async <A, E>(program: Effect.Effect<A, E, Executor.Executor>, executor: Layer.Layer<Executor.Executor, unknown>) => {
  const db = MemoryDatabase.make()
  const cbs = Trace.callbacks(db)
  await Effect.runPromise(program.pipe(Effect.provide(executor), Hooks.provide(cbs)))
  return A.loadBytesUnsafe([{ file: "memory", bytes: encodeRecords(db.list) }])
}

type Tables = ReturnType<typeof A.loadBytesUnsafe>

const wallOf = (t: Tables): number => {
  const tasks = t.tasks.toArray()
  const segs = A.driverSegments(t.driver)
  const starts = [...tasks.map((r) => r.start), ...segs.map((s) => s.start)]
  const ends = [...tasks.map((r) => r.end), ...segs.map((s) => s.end)]
  return Math.max(...ends) - Math.min(...starts)
}

/** Checks what a connected trace promises; returns the critical path's length and the wall time. */
const checkConnected = (t: Tables, isSource: (fn: string) => boolean) => {
  const tasks = t.tasks.toArray()
  const keys = tasks.map((r) => r.key as string)
  assert.equal(new Set(keys).size, keys.length, "every execution has its own key")
  const known = new Set(keys)
  for (const r of tasks) {
    const deps = (r.dependencies?.toArray() ?? []) as Array<string>
    if (!isSource(r.function as string)) assert.ok(deps.length > 0, `${r.key} (${r.function}) has no dependency`)
    for (const d of deps) assert.ok(known.has(d), `${r.key}: dependency ${d} is in the trace`)
  }
  const segs = A.driverSegments(t.driver)
  assert.ok(segs.some((s) => s.activity === "submit"), "driver segments are recorded")
  const wall = wallOf(t)
  const path = A.criticalPathSteps(t)
  const { length, steps } = path
  assert.ok(steps.length > 0)
  assert.ok(length <= wall + EPS, `critical path ${length} s within the wall time ${wall} s`)
  const byRow = (s: Exclude<CriticalStep, { _tag: "Latency" }>) =>
    s._tag === "Task"
      ? { key: keys[s.row]!, start: tasks[s.row]!.start, end: tasks[s.row]!.end, deps: (tasks[s.row]!.dependencies?.toArray() ?? []) as Array<string>, driver: false, worker: "" }
      : { key: s.segment.key, start: s.segment.start, end: s.segment.end, deps: [...s.segment.dependencies], driver: true, worker: s.segment.worker }
  const waits = new Map(segs.filter((s) => s.activity === "wait").map((s) => [s.key, s.dependencies]))
  const spanOf = (s: CriticalStep) => (s._tag === "Latency" ? { start: s.start, end: s.end } : byRow(s))
  // the path is ordered in time and does not overlap itself (clock slack aside), and its
  // steps' durations, latency included, sum to its length: its span
  let sum = 0
  for (let i = 0; i < steps.length; i++) {
    const { end, start } = spanOf(steps[i]!)
    sum += Math.max(0, end - start)
    if (i > 0) assert.ok(start >= spanOf(steps[i - 1]!).end - EPS, `step ${i + 1} starts after step ${i} ends`)
  }
  assert.ok(Math.abs(sum - length) < 1e-9, `steps sum to ${sum}, length ${length}`)
  assert.ok(Math.abs(length - (path.tasks + path.driver + path.latency)) < 1e-9)
  const first = spanOf(steps[0]!)
  const lastStep = spanOf(steps[steps.length - 1]!)
  assert.ok(length >= lastStep.end - first.start - EPS * steps.length, "the path accounts for its whole span")
  // latency steps only between two others, filling exactly the gap between them
  const real = steps.filter((s): s is Exclude<CriticalStep, { _tag: "Latency" }> => s._tag !== "Latency")
  steps.forEach((s, i) => {
    if (s._tag !== "Latency") return
    assert.ok(i > 0 && i < steps.length - 1 && steps[i - 1]!._tag !== "Latency" && steps[i + 1]!._tag !== "Latency")
    assert.equal(s.start, spanOf(steps[i - 1]!).end)
    assert.equal(s.end, spanOf(steps[i + 1]!).start)
  })
  for (let i = 1; i < real.length; i++) {
    const a = byRow(real[i - 1]!)
    const b = byRow(real[i]!)
    // the link: a listed dependency (a wait passes on to its submit), or the driver
    // segment / worker start-up that last ended before b began
    const listed = b.deps.includes(a.key) || b.deps.some((d) => (waits.get(d) ?? []).includes(a.key))
    const gated = a.driver && a.end <= b.start + 1e-4
    assert.ok(listed || gated, `step ${b.key} depends on step ${a.key}`)
  }
  for (const r of A.timeSummary(t)) {
    const sum = (r["Tasks (s)"] as number) + (r["Driver (s)"] as number) + (r["Idle (s)"] as number)
    assert.ok(Math.abs(sum - wall) < EPS, `${r.Worker}: tasks + driver + idle = ${sum}, wall ${wall}`)
  }
  return { length, wall }
}

describe("ConnectedTrace", () => {
  it("connects the demo's computes: unique keys, every non-source task has a dependency, a critical path across the run", async () => {
    const t = await traced(Tutorial5.run({ samples: 4_000, chunkRows: 1_000, log: () => {} }), Executor.layerWorkers({ workers: 2 }))
    const { length, wall } = checkConnected(t, (fn) => fn.startsWith("make_blobs"))
    // the per-chunk functions read their inputs now (DASF's Mean Data Size, our Bytes In)
    const summary = new Map([...A.perFunctionSummary(t)].map((r) => [r.Function as string, r["Bytes In"] as number]))
    for (const fn of ["lloyd", "som_epoch", "normalize", "kmeans_predict"]) {
      if (summary.has(fn)) assert.ok(summary.get(fn)! > 0, `${fn}: Bytes In ${summary.get(fn)}`)
    }
    assert.ok(length > 0.3 * wall, `critical path ${length.toFixed(3)} s of ${wall.toFixed(3)} s`)
    const run = [...A.timeSummary(t)].find((r) => r.Worker === "(run)")!
    assert.ok((run["Idle (s)"] as number) < wall, "driver and tasks explain part of the run")
  })

  it("records a key executed again by a later compute as key#2, and its consumers depend on that execution", async () => {
    const program = Effect.gen(function*() {
      const { X } = makeBlobs({ nSamples: 20, centers: [[0, 0]], chunks: 10, randomState: 1 })
      const Y = Elementwise.add(X, 1)
      yield* CA.compute(Y)
      yield* CA.compute(Y)
    })
    const t = await traced(program, Executor.layerSync)
    const rows = t.tasks.toArray()
    const again = rows.filter((r) => String(r.key).endsWith("#2"))
    assert.equal(again.length, rows.length / 2, "every task of the second compute is a second execution")
    for (const r of again) {
      for (const d of (r.dependencies?.toArray() ?? []) as Array<string>) assert.ok(d.endsWith("#2"), `${r.key} depends on ${d}`)
    }
  })

  it("gives random chains of ChunkedArray operations, persisted across computes, a connected trace", async () => {
    type Op = { readonly k: "add" | "abs" | "persist" | "mean" | "compute"; readonly from: number }
    const arbOp = fc.record({ k: fc.constantFrom("add", "abs", "persist", "mean", "compute"), from: fc.nat(20) }) as fc.Arbitrary<Op>
    await fc.assert(
      fc.asyncProperty(fc.array(arbOp, { minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 4 }), async (ops, chunks) => {
        const program = Effect.gen(function*() {
          const { X } = makeBlobs({ nSamples: 40, centers: [[0, 0], [3, 3]], chunks: Math.ceil(40 / chunks), randomState: 1 })
          const arrays: Array<CA.ChunkedArray<"float64">> = [X]
          for (const op of ops) {
            const src = arrays[op.from % arrays.length]!
            if (op.k === "add") arrays.push(Elementwise.add(src, 1))
            else if (op.k === "abs") arrays.push(Elementwise.unary(src, "abs"))
            else if (op.k === "persist") arrays.push(yield* CA.persist(src))
            else if (op.k === "mean") yield* CA.computeDelayed(Reductions.mean(src))
            else yield* CA.compute(src)
          }
          // one last compute reads the last array (lazy or persisted)
          yield* CA.computeDelayed(Reductions.sum(arrays[arrays.length - 1]!))
        })
        const t = await traced(program, Executor.layerSync)
        checkConnected(t, (fn) => fn.startsWith("make_blobs"))
      }),
      { numRuns: 25 }
    )
  })
})
