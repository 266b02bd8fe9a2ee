/**
 * The statistical profiler end to end (issue 18): V8's sampler in each worker thread,
 * samples attributed to the task that ran, written to a database, read back, exported
 * as `.cpuprofile`. Workloads are CPU work (iterations, not wall time) long enough for
 * dozens of samples at 2 ms; assertions are on proportions with margin.
 */
import assert from "node:assert/strict"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { Effect, Layer } from "effect"
import * as fc from "fast-check"
import { cpuProfiles, flameTree, frameTimes, profileTable, selectSamples } from "../../src/analysis/Profile.ts"
import { NoSamples, writeCpuProfiles } from "../../src/analysis/exports/CpuProfile.ts"
import * as Engine from "../../src/engine/Engine.ts"
import type { TaskRecord } from "../../src/engine/EngineEvents.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as StatisticalProfiler from "../../src/profiler/StatisticalProfiler.ts"
import { type ProfileData, ProfileReader, readProfilePromise, SampleEncoder } from "../../src/trace/SampleEvents.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-sample-"))
after(() => rmSync(dir, { recursive: true, force: true }))

const projectRoot = new URL("../..", import.meta.url).pathname
const spinModule = new URL("../fixtures/kernels/spin.ts", import.meta.url).href
// iterations per task: ~0.1–0.3 s of CPU on an unloaded core
const N = 6_000_000

const spec = (key: string, kernel: "task" | "otherTask", stage = "spinning"): TaskGraph.TaskSpec => ({
  key,
  kernel: Kernel.ref(spinModule, kernel),
  args: [N],
  stage
})

/**
 * Runs `program` under the statistical profiler (2 ms, the main thread sampled unless
 * `driver` says otherwise) writing `file`, on `workers` threads (0: the in-process
 * executor); returns the task records.
 */
const profiled = async <A>(file: string, workers: number, program: Effect.Effect<A, unknown, Executor.Executor>, driver: boolean | undefined = true) => {
  const records: Array<TaskRecord> = []
  await Effect.runPromise(program.pipe(
    Effect.provide(workers === 0 ? Executor.layerSync : Executor.layerWorkers({ workers })),
    Effect.provide(Hooks.layer({ task: (r) => void records.push(r) })),
    Effect.provide(StatisticalProfiler.layer({ file, interval: 2, overwrite: true, root: projectRoot, ...(driver === undefined ? {} : { driver }) }))
  ))
  return { records, data: await readProfilePromise([file]) }
}

const topFrame = (d: ProfileData, q: number): string => {
  const s = d.samples.stack[q]!
  return s < 0 ? "" : d.frames[d.frame[s]!]!.functionName
}
const stackNames = (d: ProfileData, q: number): Array<string> => {
  const out: Array<string> = []
  for (let s = d.samples.stack[q]!; s >= 0; s = d.parent[s]!) out.push(d.frames[d.frame[s]!]!.functionName)
  return out
}

describe("StatisticalProfiler", () => {
  it("a kernel spending its time in spin gets at least 80% of its samples in spin, attributed to its function and stage", async () => {
    const file = join(dir, "spin-StatisticalProfiler-h.msgpack")
    const g = TaskGraph.makeUnsafe([0, 1, 2, 3].map((i) => spec(`spinning-${i}`, "task")))
    const { data } = await profiled(file, 2, Engine.compute(g))
    const mine = selectSamples(data, { function: "spinning" })
    assert.ok(mine.length >= 20, `only ${mine.length} samples of spinning`)
    const inSpin = mine.filter((q) => topFrame(data, q) === "spin").length
    assert.ok(inSpin / mine.length >= 0.8, `${inSpin} of ${mine.length} samples in spin`)
    // spin is reached from task, and every spin sample is the kernel's
    for (const q of mine.filter((q) => topFrame(data, q) === "spin")) assert.equal(stackNames(data, q)[1], "task")
    for (let q = 0; q < data.samples.time.length; q++) if (topFrame(data, q) === "spin") assert.equal(data.samples.name[q], "spinning")
    assert.deepEqual(new Set(mine.map((q) => data.samples.stage[q])), new Set(["spinning"]))
    assert.ok(mine.every((q) => /^spinning-\d$/.test(data.samples.key[q]!)))
    // the kernel file shows relative to the project
    const spinFrame = data.frames.find((f) => f.functionName === "spin")!
    assert.equal(spinFrame.url, "test/fixtures/kernels/spin.ts")
    // the views agree: spin tops self time of the function's samples
    assert.equal(frameTimes(data, { function: "spinning" })[0]!.frame.functionName, "spin")
    assert.equal(profileTable(data, { stage: "spinning" }).getChild("function")!.get(0), "spin")
    const tree = flameTree(data, { function: "spinning" })
    assert.equal(tree.samples, mine.length)
    assert.equal(tree.children[0]!.name, "spinning")
  })

  it("samples of two kernels running at once on different workers never cross", async () => {
    const file = join(dir, "two-StatisticalProfiler-h.msgpack")
    const g = TaskGraph.makeUnsafe([spec("alpha-0", "task", "a"), spec("beta-0", "otherTask", "b")])
    const { data, records } = await profiled(file, 2, Engine.compute(g))
    const threads = new Map(records.map((r) => [r.name, r.threadId]))
    assert.notEqual(threads.get("alpha"), threads.get("beta"), "the two tasks ran on different workers")
    const alpha = selectSamples(data, { function: "alpha" })
    const beta = selectSamples(data, { function: "beta" })
    assert.ok(alpha.length >= 10 && beta.length >= 10, `alpha ${alpha.length}, beta ${beta.length} samples`)
    for (const q of alpha) {
      assert.ok(!stackNames(data, q).includes("spinOther"), "an alpha sample in beta's code")
      assert.equal(data.samples.thread[q], threads.get("alpha"))
    }
    for (const q of beta) {
      assert.ok(!stackNames(data, q).includes("spin"), "a beta sample in alpha's code")
      assert.equal(data.samples.thread[q], threads.get("beta"))
    }
  })

  it("a worker with no task reports idle, and the driver reports driver", async () => {
    const file = join(dir, "idle-StatisticalProfiler-h.msgpack")
    const g1 = TaskGraph.makeUnsafe([spec("first-0", "task")])
    const g2 = TaskGraph.makeUnsafe([spec("second-0", "task")])
    let gap: [number, number] = [0, 0]
    const { data } = await profiled(
      file,
      1,
      Effect.gen(function*() {
        yield* Engine.compute(g1)
        const a = performance.timeOrigin / 1000 + performance.now() / 1000
        yield* Effect.sleep(300)
        gap = [a, performance.timeOrigin / 1000 + performance.now() / 1000]
        yield* Engine.compute(g2)
      })
    )
    const between = selectSamples(data, { from: gap[0], to: gap[1], thread: "worker-" + data.samples.host[0] + "-0" })
    assert.ok(between.length >= 10, `${between.length} worker samples while it had no task`)
    for (const q of between) {
      assert.equal(data.samples.name[q], "idle")
      assert.equal(data.samples.key[q], "")
      assert.ok(!stackNames(data, q).includes("spin"))
    }
    const driver = selectSamples(data, { thread: "driver" })
    assert.ok(driver.length > 0)
    assert.ok(driver.every((q) => data.samples.name[q] === "driver"))
    assert.ok(selectSamples(data, { function: "first" }).length > 0 && selectSamples(data, { function: "second" }).length > 0)
  })

  it("exports .cpuprofile files that parse, one per worker or function, with the trace's sample count", async () => {
    const file = join(dir, "spin-StatisticalProfiler-h.msgpack")
    const data = await readProfilePromise([file])
    const total = data.samples.time.length
    for (const by of ["worker", "function"] as const) {
      const out = join(dir, `cpu-${by}`)
      const written = await writeCpuProfiles([file], out, by)
      assert.equal(readdirSync(out).length, written.length)
      let count = 0
      for (const w of written) {
        const p = JSON.parse(readFileSync(w.file, "utf8")) as ReturnType<typeof cpuProfiles>[number]["profile"]
        assert.equal(p.samples.length, p.timeDeltas.length)
        // less the "(unsampled)" samples that fill time no sample stands for (issue 31 item 1)
        const gaps = p.nodes.find((n) => n.callFrame.functionName === "(unsampled)")?.hitCount ?? 0
        assert.equal(p.samples.length - gaps, w.samples)
        assert.equal(p.nodes[0]!.id, 1)
        assert.equal(p.nodes[0]!.callFrame.functionName, "(root)")
        const ids = new Set(p.nodes.map((n) => n.id))
        for (const n of p.nodes) for (const c of n.children) assert.ok(ids.has(c))
        for (const s of p.samples) assert.ok(ids.has(s))
        assert.ok(p.timeDeltas.every((d) => d >= 0))
        assert.ok(p.endTime >= p.startTime)
        count += w.samples
      }
      assert.equal(count, total, `--by ${by}: samples in the files vs the trace`)
    }
    const names = readdirSync(join(dir, "cpu-function"))
    assert.ok(names.includes("spinning.cpuprofile") && names.includes("driver.cpuprofile"), names.join(" "))
  })

  it("export fails with NoSamples, naming the files, when they hold no samples", async () => {
    const fixture = new URL("../fixtures/dasf-small/small-TracePlugin.msgpack", import.meta.url).pathname
    await assert.rejects(writeCpuProfiles([fixture], join(dir, "none"), "worker"), (e: unknown) => e instanceof NoSamples && e.message.includes("small-TracePlugin.msgpack"))
  })

  it("the in-process executor's tasks get the main thread's samples: key, function and stage; the rest is driver", async () => {
    const file = join(dir, "sync-StatisticalProfiler-h.msgpack")
    const g = TaskGraph.makeUnsafe([0, 1].map((i) => spec(`syncspin-${i}`, "task", "inprocess")))
    const { data, records } = await profiled(
      file,
      0,
      Effect.gen(function*() {
        yield* Engine.compute(g)
        // driver work after the compute, outside any task
        const t = performance.now()
        let x = 0
        while (performance.now() - t < 150) x += Math.sqrt(x + 1)
        return x
      }),
      undefined // the default: the main thread is sampled because tasks run on it
    )
    assert.ok(records.every((r) => r.mainThread === true), "the in-process executor's records say so")
    const mine = selectSamples(data, { function: "syncspin" })
    assert.ok(mine.length >= 20, `only ${mine.length} samples of syncspin`)
    const inSpin = mine.filter((q) => topFrame(data, q) === "spin").length
    assert.ok(inSpin / mine.length >= 0.8, `${inSpin} of ${mine.length} samples in spin`)
    assert.ok(mine.every((q) => data.samples.thread[q] === "driver" && data.samples.stage[q] === "inprocess"))
    assert.ok(mine.every((q) => /^syncspin-[01]$/.test(data.samples.key[q]!)))
    // every spin sample is a task's; the main thread's samples outside tasks are the driver's
    for (let q = 0; q < data.samples.time.length; q++) if (topFrame(data, q) === "spin") assert.equal(data.samples.name[q], "syncspin")
    const driver = selectSamples(data, { function: "driver" })
    assert.ok(driver.length > 0, "no driver samples")
    assert.ok(driver.every((q) => data.samples.thread[q] === "driver" && data.samples.key[q] === ""))
  })

  it("by default a worker pool's main thread is not sampled; a second layer on the same pool gets only its own samples", async () => {
    const g = (tag: string) => TaskGraph.makeUnsafe([0, 1].map((i) => spec(`${tag}-${i}`, "task")))
    const files = [join(dir, "again1-StatisticalProfiler-h.msgpack"), join(dir, "again2-StatisticalProfiler-h.msgpack")]
    const marks: Array<number> = []
    const clock = () => performance.timeOrigin / 1000 + performance.now() / 1000
    await Effect.runPromise(Effect.gen(function*() {
      for (const [k, file] of files.entries()) {
        marks.push(clock())
        yield* Engine.compute(g(`again${k + 1}`)).pipe(Effect.provide(StatisticalProfiler.layer({ file, interval: 2, overwrite: true, root: projectRoot })))
        marks.push(clock())
        // the pool's samplers keep running between the layers: what they take now is nobody's
        const t = performance.now()
        while (performance.now() - t < 100) yield* Effect.sleep(5)
      }
    }).pipe(Effect.provide(Executor.layerWorkers({ workers: 2 }))))
    for (const [k, file] of files.entries()) {
      const data = await readProfilePromise([file])
      const n = data.samples.time.length
      assert.ok(selectSamples(data, { function: `again${k + 1}` }).length >= 10, `layer ${k + 1}: too few samples`)
      assert.equal(selectSamples(data, { thread: "driver" }).length, 0, "main thread sampled")
      for (let q = 0; q < n; q++) {
        const t = data.samples.time[q]!
        assert.ok(t >= marks[2 * k]! && t <= marks[2 * k + 1]!, `layer ${k + 1}: a sample at ${t} outside its life ${marks[2 * k]}..${marks[2 * k + 1]}`)
        assert.notEqual(data.samples.name[q], `again${2 - k}`)
      }
    }
  })

  it("a pool whose workers start sampling at boot (sampleInterval) hands their samples to the layer", async () => {
    const file = join(dir, "boot-StatisticalProfiler-h.msgpack")
    const g = TaskGraph.makeUnsafe([0, 1].map((i) => spec(`booted-${i}`, "task")))
    await Effect.runPromise(Effect.gen(function*() {
      // the workers sample, for nobody, before any layer asks
      yield* Engine.compute(TaskGraph.makeUnsafe([spec("before-0", "task")]))
      yield* Engine.compute(g).pipe(Effect.provide(StatisticalProfiler.layer({ file, interval: 2, overwrite: true, root: projectRoot })))
    }).pipe(Effect.provide(Executor.layerWorkers({ workers: 2, sampleInterval: 2 }))))
    const data = await readProfilePromise([file])
    const mine = selectSamples(data, { function: "booted" })
    assert.ok(mine.length >= 10, `only ${mine.length} samples of booted`)
    assert.ok(mine.filter((q) => topFrame(data, q) === "spin").length / mine.length >= 0.8)
    assert.equal(selectSamples(data, { function: "before" }).length, 0, "samples taken before the layer reached it")
    for (let q = 0; q < data.samples.time.length; q++) if (topFrame(data, q) === "spin") assert.equal(data.samples.name[q], "booted")
  })

  it("attributes each sample to the task span that holds it, or to none (property)", () => {
    fc.assert(fc.property(
      fc.array(fc.tuple(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 50 })), { maxLength: 20 }),
      fc.array(fc.integer({ min: 0, max: 2000 }), { maxLength: 60 }),
      (gapsAndLengths, rawTimes) => {
        // disjoint spans in ms, far apart relative to the slack
        let t = 0
        const spans = gapsAndLengths.map(([gap, len], i) => {
          const start = (t += gap) / 1000
          const end = (t += len) / 1000
          return { start, end, key: `k-${i}`, name: "k", stage: "" }
        })
        const all = [...spans]
        const times = rawTimes.map((x) => x / 1000).sort((a, b) => a - b)
        const a = StatisticalProfiler.attribute(spans, times)
        times.forEach((time, q) => {
          const holder = all.find((s) => s.start <= time && time <= s.end)
          if (holder !== undefined) assert.equal(a.keys[a.task[q]! - 1], holder.key)
          else if (a.task[q] !== 0) {
            const s = all.find((x) => x.key === a.keys[a.task[q]! - 1])!
            assert.ok(time - s.end <= StatisticalProfiler.slackSeconds + 1e-12 || s.start - time <= StatisticalProfiler.slackSeconds + 1e-12)
          }
        })
      }
    ))
  })

  it("encodes and reads back stacks and attribution (property)", () => {
    const node = fc.record({ fn: fc.constantFrom("a", "b", "c", ""), parent: fc.nat(10) })
    fc.assert(fc.property(fc.array(node, { minLength: 1, maxLength: 12 }), fc.array(fc.nat(11), { minLength: 1, maxLength: 30 }), (raw, picks) => {
      // a V8-like tree: node 1 is (root); node i+2's parent is an earlier node
      const nodes = [{ id: 1, parent: 0, functionName: "(root)", url: "", line: -1, column: -1 }, ...raw.map((r, i) => ({
        id: i + 2,
        parent: 1 + (r.parent % (i + 1)),
        functionName: r.fn,
        url: `src/f${r.fn}.ts`,
        line: i,
        column: 0
      }))]
      const samples = picks.map((p) => 2 + (p % raw.length))
      const times = samples.map((_, q) => 1000 + q * 0.002)
      const task = samples.map((_, q) => q % 2)
      const events = new SampleEncoder().encode({ host: "h", threadId: "worker-h-0", interval: 0.002, nodes, samples, times, task, keys: ["x-1"], names: ["x"], stages: ["s"] })
      const reader = new ProfileReader()
      for (const e of events) reader.add(e)
      const d = reader.data()
      const path = (id: number): Array<string> => {
        const out: Array<string> = []
        for (let n = nodes.find((x) => x.id === id)!; n.id !== 1; n = nodes.find((x) => x.id === n.parent)!) out.push(`${n.functionName}@${n.line}`)
        return out
      }
      assert.equal(d.samples.time.length, samples.length)
      samples.forEach((id, q) => {
        const got: Array<string> = []
        for (let s = d.samples.stack[q]!; s >= 0; s = d.parent[s]!) got.push(`${d.frames[d.frame[s]!]!.functionName}@${d.frames[d.frame[s]!]!.line}`)
        assert.deepEqual(got, path(id))
        assert.ok(Math.abs(d.samples.time[q]! - times[q]!) < 1e-6)
        assert.equal(d.samples.name[q], q % 2 === 1 ? "x" : "idle")
      })
    }))
  })

  it("rejects a non-positive interval", async () => {
    const layer = StatisticalProfiler.layer({ file: join(dir, "bad.msgpack"), interval: 0 })
    const exit = await Effect.runPromiseExit(Effect.void.pipe(Effect.provide(Layer.fresh(layer))))
    assert.equal(exit._tag, "Failure")
    assert.match(String(exit._tag === "Failure" ? exit.cause : ""), /interval must be positive, got 0/)
  })
})
