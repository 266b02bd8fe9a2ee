/**
 * The dispatcher (internal/dispatch/dispatcher.ts) with no threads and no processes, in
 * the style of distributed's `test_worker_state_machine.py`: a simulated world carries
 * out its instructions (slots run batches in order, fetch inputs from each other, forget
 * what they are told to release, vanish) while fast-check drives random DAGs through
 * random event sequences — completions in any order and cut short, slots joining, lost
 * mid-batch (blamed or not), slow, interruptions, kernel failures — and checks the
 * invariants: every needed task computed once with the reference's value, none before
 * its inputs, none kept after its last dependent unless requested, a lost result
 * recomputed by one batch at a time, `Finish` exactly once, placement by inputs held.
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as fc from "fast-check"
import * as State from "../../src/engine/State.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { Dispatcher, type Finish, type Instruction, type Run } from "../../src/engine/internal/dispatch/dispatcher.ts"
import { mix } from "../fixtures/kernels/basic.ts"
import { dagArb, k, mixGraph, neededOf, type RandomDag, reference } from "./graphs.ts"

interface SimSlot {
  readonly id: number
  readonly kind: number
  alive: boolean
  /** results held (non-shared worlds) */
  readonly store: Map<number, number>
  /** batches received, run in order */
  readonly queue: Array<Run>
}

type Op =
  | { readonly op: "complete"; readonly pick: number; readonly cut: number | null; readonly seconds: number }
  | { readonly op: "lose"; readonly pick: number; readonly blame: number | null }
  | { readonly op: "join"; readonly kind: number }
  | { readonly op: "slow"; readonly pick: number; readonly on: boolean }
  | { readonly op: "interrupt" }
  | { readonly op: "fail"; readonly pick: number }
  | { readonly op: "tick" }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 12, arbitrary: fc.record({ op: fc.constant("complete" as const), pick: fc.nat(), cut: fc.option(fc.nat(6), { nil: null, freq: 4 }), seconds: fc.double({ min: 0, max: 0.01, noNaN: true }) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("lose" as const), pick: fc.nat(), blame: fc.option(fc.nat(8), { nil: null }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("join" as const), kind: fc.nat(1) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("slow" as const), pick: fc.nat(), on: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("tick" as const) }) }
)
const rareArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant("interrupt" as const) }),
  fc.record({ op: fc.constant("fail" as const), pick: fc.nat() })
)

interface Scenario {
  readonly dag: RandomDag
  readonly shared: boolean
  readonly kinds: boolean
  readonly slots: number
  readonly maxBatch: number
  readonly fetchKeeps: ReadonlyArray<boolean>
  /** seconds fusion may widen a batch while a slot idles (the cluster's rule), or none */
  readonly width: number | null
  readonly ops: ReadonlyArray<Op>
}

const scenarioArb = (rare: boolean): fc.Arbitrary<Scenario> =>
  fc.record({
    dag: dagArb(40),
    shared: fc.boolean(),
    kinds: fc.boolean(),
    slots: fc.integer({ min: 1, max: 4 }),
    maxBatch: fc.integer({ min: 1, max: 8 }),
    fetchKeeps: fc.array(fc.boolean(), { minLength: 1, maxLength: 16 }),
    width: fc.option(fc.double({ min: 0, max: 0.05, noNaN: true }), { nil: null }),
    ops: rare
      ? fc.array(fc.oneof({ weight: 20, arbitrary: opArb }, { weight: 1, arbitrary: rareArb }), { maxLength: 80 })
      : fc.array(opArb, { maxLength: 80 })
  })

/** A world that carries out a dispatcher's instructions, checking each against the invariants. */
class World {
  readonly graph: TaskGraph.TaskGraph
  readonly state: State.SchedulerState
  readonly d: Dispatcher
  readonly slots: Array<SimSlot> = []
  readonly finishes: Array<Finish> = []
  readonly ref: Array<number>
  /** tasks of recover batches in flight (on live slots) */
  readonly recovering = new Map<number, number>()
  /** how often each task's result was made by a batch the dispatcher accepted */
  readonly made: Int32Array
  readonly kindOf: Uint8Array | null
  private fetches = 0
  /** failures the events asked for */
  readonly asked = new Set<string>()

  readonly sc: Scenario

  constructor(sc: Scenario) {
    this.sc = sc
    this.graph = mixGraph(sc.dag)
    this.ref = reference(sc.dag)
    const requested = Int32Array.from(sc.dag.requested.map((r) => this.graph.index.get(`t-${r}`)!))
    this.state = State.init(this.graph, requested)
    this.kindOf = sc.kinds ? Uint8Array.from({ length: this.graph.size }, (_, i) => i % 3 === 2 ? 1 : 0) : null
    this.made = new Int32Array(this.graph.size)
    this.d = new Dispatcher(this.state, {
      batchSeconds: 0.002,
      maxBatch: sc.maxBatch,
      maxInflight: 2,
      initialTaskSeconds: 0.0001,
      maxRetries: 2,
      shared: sc.shared,
      kindOf: this.kindOf,
      ...(sc.width !== null ? { fuseWidth: (idle: number) => (idle > 0 ? sc.width! : Infinity), taskCost: () => 0.01 } : {})
    })
    for (let q = 0; q < sc.slots; q++) this.addSlot(q % 2 === 1 && sc.kinds ? 1 : 0, false)
    if (sc.kinds && sc.slots === 1) this.addSlot(1, false)
    this.d.start()
    this.apply(this.d.take())
  }

  /** The task index of DAG node `t`, and back. */
  private nodeOf(i: number): number {
    return Number(this.graph.keys[i]!.slice(2))
  }

  addSlot(kind: number, announce = true): void {
    const id = this.slots.length
    this.slots.push({ id, kind, alive: true, store: new Map(), queue: [] })
    this.d.join(id, kind)
    if (announce) this.apply(this.d.take())
  }

  live(): Array<SimSlot> {
    return this.slots.filter((x) => x.alive)
  }

  /** Whether some live slot holds `i`'s result (the non-shared world's "it exists"). */
  private heldSomewhere(i: number): number | undefined {
    for (const sl of this.slots) if (sl.alive && sl.store.has(i)) return sl.store.get(i)
    return undefined
  }

  apply(ins: ReadonlyArray<Instruction>): void {
    const s = this.state
    const g = this.graph
    for (const x of ins) {
      if (x._tag === "Finish") {
        this.finishes.push(x)
        continue
      }
      const sl = this.slots[x.slot]!
      assert.ok(sl.alive, `an instruction for lost slot ${x.slot}`)
      if (x._tag === "Release") {
        for (const i of x.tasks) {
          assert.ok(!this.d.holdersOf(i).includes(x.slot), `released ${g.keys[i]} on ${x.slot}, still one of its holders`)
          sl.store.delete(i)
        }
        continue
      }
      // none before its inputs: each input finished (with a live copy) or earlier in the batch
      const pos = new Map<number, number>()
      x.tasks.forEach((i, q) => pos.set(i, q))
      x.tasks.forEach((i, q) => {
        if (!x.recover) {
          assert.equal(s.running[i], 1, `${g.keys[i]} sent but not running`)
          if (this.kindOf !== null) assert.equal(this.kindOf[i], sl.kind, `${g.keys[i]} on a slot of another kind`)
        }
        for (let j = g.depStart[i]!; j < g.depStart[i + 1]!; j++) {
          const dep = g.depList[j]!
          if ((pos.get(dep) ?? Infinity) < q) continue
          assert.ok(s.finished[dep], `${g.keys[i]} sent before its input ${g.keys[dep]} finished`)
          if (this.sc.shared) assert.ok(!s.released[dep], `${g.keys[i]} sent after its input ${g.keys[dep]} was released`)
          else assert.ok(this.d.holdersOf(dep).length > 0, `${g.keys[i]} sent while its input ${g.keys[dep]} has no live holder`)
        }
      })
      if (x.recover) tally.recoverBatches++
      if (x.fusedFrom < x.tasks.length && !x.recover) tally.fusedBatches++
      if (x.recover) {
        for (const i of x.tasks) {
          if (s.finished[i] && !s.released[i] && this.d.holdersOf(i).length === 0) {
            assert.ok(!this.recovering.has(i), `${g.keys[i]} recomputed by two batches at once`)
            this.recovering.set(i, x.batch)
          }
        }
      }
      sl.queue.push(x)
    }
  }

  /** Slot `sl` runs its first batch: all of it, or the first `cut` tasks; an input it cannot get stops it. */
  complete(sl: SimSlot, cut: number | null, seconds: number): void {
    const run = sl.queue.shift()
    if (run === undefined) return
    const s = this.state
    const g = this.graph
    const local = new Map<number, number>()
    const n = cut === null ? run.tasks.length : Math.min(cut, run.tasks.length)
    for (let q = 0; q < n; q++) {
      const i: number = run.tasks[q]!
      const inputs: Array<number> = []
      let missing = false
      for (const dep of this.sc.dag.deps[this.nodeOf(i)]!) {
        const di = g.index.get(`t-${dep}`)!
        let v = local.get(di)
        if (v === undefined) {
          if (this.sc.shared) {
            assert.ok(s.finished[di] && !s.released[di], `${g.keys[i]} ran without its input ${g.keys[di]}`)
            v = s.cache[di] as number
          } else {
            v = sl.store.get(di) ?? this.heldSomewhere(di)
            if (v === undefined) {
              missing = true
              break
            }
            if (!sl.store.has(di) && this.sc.fetchKeeps[this.fetches++ % this.sc.fetchKeeps.length]) {
              sl.store.set(di, v)
              this.d.arrived(sl.id, di)
            }
          }
        }
        inputs.push(v)
      }
      if (missing) break
      const v = mix(this.nodeOf(i), inputs)
      assert.equal(v, this.ref[this.nodeOf(i)], `${g.keys[i]} computed a wrong value`)
      local.set(i, v)
      const was = s.finished[i]
      if (!this.sc.shared) sl.store.set(i, v)
      this.d.taskDone(sl.id, run.batch, q, v, 8 + (i % 5) * 100)
      if (!run.recover && !was && s.finished[i]) this.made[i]!++
    }
    if (run.recover) for (const i of run.tasks) if (this.recovering.get(i) === run.batch) this.recovering.delete(i)
    this.d.batchDone(sl.id, run.batch, seconds)
    this.apply(this.d.take())
  }

  lose(sl: SimSlot, blame: number | null): void {
    sl.alive = false
    sl.store.clear()
    const first = sl.queue[0]
    for (const r of sl.queue) if (r.recover) for (const i of r.tasks) if (this.recovering.get(i) === r.batch) this.recovering.delete(i)
    sl.queue.length = 0
    const b = first !== undefined && blame !== null ? { batch: first.batch, index: blame % first.tasks.length } : undefined
    if (b !== undefined) this.asked.add("RetriesExhausted")
    this.d.lose(sl.id, b)
    this.apply(this.d.take())
  }

  step(op: Op): void {
    if (this.finishes.length > 0) return
    const live = this.live()
    const pick = <A>(xs: ReadonlyArray<A>, n: number): A | undefined => (xs.length === 0 ? undefined : xs[n % xs.length])
    switch (op.op) {
      case "complete": {
        const sl = pick(live.filter((x) => x.queue.length > 0), op.pick)
        if (sl !== undefined) this.complete(sl, op.cut, op.seconds)
        return
      }
      case "lose": {
        const sl = pick(live, op.pick)
        if (sl !== undefined) this.lose(sl, op.blame)
        return
      }
      case "join":
        return this.addSlot(this.sc.kinds ? op.kind : 0)
      case "slow": {
        const sl = pick(live, op.pick)
        if (sl !== undefined) this.d.slow(sl.id, op.on)
        this.apply(this.d.take())
        return
      }
      case "interrupt":
        this.asked.add("Interrupted")
        this.d.fail({ _tag: "Interrupted" })
        this.apply(this.d.take())
        return
      case "fail": {
        const inflight = live.flatMap((x) => x.queue.filter((r) => !r.recover).flatMap((r) => [...r.tasks]))
        const t = pick(inflight, op.pick)
        if (t === undefined) return
        this.asked.add("TaskFailed")
        this.d.fail({ _tag: "TaskFailed", task: t, cause: new Error("boom") })
        this.apply(this.d.take())
        return
      }
      case "tick":
        this.d.dispatch()
        this.apply(this.d.take())
        return
    }
  }

  /** Runs the world to the end: slots finish their batches (joining where none is left of a kind). */
  drain(): void {
    for (let round = 0; round < 20_000; round++) {
      if (this.finishes.length > 0) return
      for (const kind of this.sc.kinds ? [0, 1] : [0]) {
        if (!this.live().some((x) => x.kind === kind)) this.addSlot(kind)
      }
      if (this.finishes.length > 0) return
      const busy = this.live().filter((x) => x.queue.length > 0)
      // a slow slot gets one batch at a time: make every slot normal again so the end is reached
      if (busy.length === 0) {
        for (const x of this.live()) this.d.slow(x.id, false)
        this.apply(this.d.take())
        if (this.live().every((x) => x.queue.length === 0) && this.finishes.length === 0) {
          assert.fail(`stalled: ${this.state.finishedCount}/${this.state.total} finished, ${this.state.readyCount} ready, ${this.state.runningCount} running`)
        }
        continue
      }
      this.complete(busy[round % busy.length]!, null, 0.001)
    }
  }

  /** The invariants at the end. */
  check(): void {
    assert.equal(this.finishes.length, 1, "Finish exactly once")
    const f = this.finishes[0]!.failure
    if (f !== null) {
      assert.ok(this.asked.has(f._tag), `failed with ${f._tag}, which nothing asked for`)
      return
    }
    const s = this.state
    const g = this.graph
    const needed = neededOf(this.sc.dag)
    for (let i = 0; i < g.size; i++) {
      const node = this.nodeOf(i)
      assert.equal(s.needed[i] === 1, needed.has(node), `${g.keys[i]} needed`)
      if (!needed.has(node)) {
        assert.equal(this.made[i], 0, `${g.keys[i]} computed though not needed`)
        continue
      }
      assert.equal(s.finished[i], 1, `${g.keys[i]} never computed`)
      assert.equal(this.made[i], 1, `${g.keys[i]} finished ${this.made[i]} times`)
    }
    const requested = new Set(this.sc.dag.requested.map((r) => g.index.get(`t-${r}`)!))
    for (const r of requested) {
      const v = this.sc.shared ? s.cache[r] : this.heldSomewhere(r)
      assert.equal(v, this.ref[this.nodeOf(r)], `requested ${g.keys[r]} has the reference's value`)
    }
    for (let i = 0; i < g.size; i++) {
      if (requested.has(i)) continue
      if (this.sc.shared) assert.equal(s.cache[i], undefined, `${g.keys[i]} kept in the cache after its last dependent`)
      else for (const sl of this.live()) assert.ok(!sl.store.has(i), `${g.keys[i]} kept on slot ${sl.id} after its last dependent`)
    }
  }
}

/** property runs: `n`, or TESSERA_DISPATCH_RUNS times that (a longer hunt) */
const runs = (n: number): number => n * Number(process.env.TESSERA_DISPATCH_RUNS ?? 1)

const runScenario = (sc: Scenario): void => {
  const w = new World(sc)
  for (const op of sc.ops) w.step(op)
  w.drain()
  w.check()
  tally.runs++
  tally.tasks += w.state.total
  if (w.finishes[0]!.failure === null) tally.ok++
}
/** what the random runs exercised (printed with TESSERA_DISPATCH_TALLY=1) */
const tally = { runs: 0, ok: 0, tasks: 0, recoverBatches: 0, fusedBatches: 0 }
if (process.env.TESSERA_DISPATCH_TALLY === "1") process.on("exit", () => console.log(JSON.stringify(tally)))

describe("Dispatcher (no threads, no processes)", () => {
  it("issue 37: random DAGs, random completions, joins, losses and slow slots: every task once, in order, nothing kept, Finish once", () => {
    fc.assert(fc.property(scenarioArb(false), runScenario), { numRuns: runs(400) })
  })

  it("issue 37: with interruptions and kernel failures too, Finish comes exactly once, with the failure asked for", () => {
    fc.assert(fc.property(scenarioArb(true), runScenario), { numRuns: runs(200) })
  })

  it("issue 37: a ready task goes to the slot that holds the largest of its inputs", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 1_000_000 }), { minLength: 2, maxLength: 4 }), fc.nat(3), (sizes, first) => {
        // one input per slot, each made there with its size; then the task that reads them all
        const n = sizes.length
        const specs: Array<TaskGraph.TaskSpec> = sizes.map((_, q) => ({ key: `in-${q}`, kernel: k("mix"), args: [q, []] }))
        specs.push({ key: "out", kernel: k("mix"), args: [9, TaskGraph.refs(sizes.map((_, q) => `in-${q}`))] })
        const g = TaskGraph.makeUnsafe(specs)
        const s = State.init(g, Int32Array.of(g.index.get("out")!))
        const d = new Dispatcher(s, { batchSeconds: 1, maxBatch: 1, maxInflight: 2, initialTaskSeconds: 1, maxRetries: 0, shared: false, fuse: false })
        for (let q = 0; q < n; q++) d.join((q + first) % n)
        d.start()
        const runs = d.take().filter((x): x is Run => x._tag === "Run")
        assert.equal(runs.length, n)
        // every input runs somewhere; report each done with its size on the slot it ran on
        const holder = new Map<number, number>()
        for (const r of runs) holder.set(r.tasks[0]!, r.slot)
        for (const r of runs) {
          const i = r.tasks[0]!
          d.taskDone(r.slot, r.batch, 0, 0, sizes[Number(g.keys[i]!.slice(3))]!)
        }
        for (const r of runs) d.batchDone(r.slot, r.batch, 0)
        const next = d.take().filter((x): x is Run => x._tag === "Run")
        assert.equal(next.length, 1)
        const biggest = sizes.indexOf(Math.max(...sizes))
        const want = holder.get(g.index.get(`in-${biggest}`)!)
        // ties: any slot holding an input of the largest size
        const ok = [...holder].filter(([i]) => sizes[Number(g.keys[i]!.slice(3))] === sizes[biggest]).map(([, sl]) => sl)
        assert.ok(ok.includes(next[0]!.slot), `out went to slot ${next[0]!.slot}, the largest input is on ${want}`)
      }),
      { numRuns: 200 }
    )
  })

  it("issue 37: a chain travels in one batch (fusion), and a batch cut short sends the rest again", () => {
    const specs: Array<TaskGraph.TaskSpec> = []
    for (let q = 0; q < 6; q++) specs.push({ key: `c-${q}`, kernel: k("mix"), args: [q, q === 0 ? [] : TaskGraph.refs([`c-${q - 1}`])] })
    const g = TaskGraph.makeUnsafe(specs)
    const s = State.init(g, Int32Array.of(g.index.get("c-5")!))
    const d = new Dispatcher(s, { batchSeconds: 1, maxBatch: 64, maxInflight: 2, initialTaskSeconds: 0.001, maxRetries: 0, shared: true })
    d.join(0)
    d.start()
    const [run] = d.take() as Array<Run>
    assert.deepEqual([...run!.tasks].map((i) => g.keys[i]), ["c-0", "c-1", "c-2", "c-3", "c-4", "c-5"])
    assert.equal(run!.fusedFrom, 1)
    // the first two done, then the batch ends: the rest go out again, from c-2
    d.taskDone(0, run!.batch, 0, 1)
    d.taskDone(0, run!.batch, 1, 2)
    d.batchDone(0, run!.batch, 0.001)
    const [again] = d.take() as Array<Run>
    assert.deepEqual([...again!.tasks].map((i) => g.keys[i]), ["c-2", "c-3", "c-4", "c-5"])
  })

  it("issue 37: while a slot is idle, fusion continues a task's line but widens a batch only by the work a round trip is worth", () => {
    const specs: Array<TaskGraph.TaskSpec> = [{ key: "root", kernel: k("mix"), args: [0, []] }]
    for (let q = 0; q < 4; q++) specs.push({ key: `leaf-${q}`, kernel: k("mix"), args: [q, TaskGraph.refs(["root"])] })
    const g = TaskGraph.makeUnsafe(specs)
    const all = Int32Array.from({ length: g.size }, (_, i) => i)
    const batchOf = (fuseWidth?: (idle: number) => number): Array<string> => {
      const d = new Dispatcher(State.init(g, all), {
        batchSeconds: 1,
        maxBatch: 64,
        maxInflight: 1,
        initialTaskSeconds: 0.001,
        maxRetries: 0,
        shared: false,
        ...(fuseWidth !== undefined ? { fuseWidth, taskCost: () => 0.01 } : {})
      })
      d.join(0)
      d.join(1)
      d.start()
      const runs = d.take().filter((x): x is Run => x._tag === "Run")
      assert.equal(runs.length, 1, "one ready task, one batch")
      return [...runs[0]!.tasks].map((i) => g.keys[i]!)
    }
    assert.deepEqual(batchOf(), ["root", "leaf-0", "leaf-1", "leaf-2", "leaf-3"])
    // slot 1 idle: a round trip's worth (0.025 s) lets two more 0.01 s leaves in
    assert.deepEqual(batchOf((idle) => (idle > 0 ? 0.025 : Infinity)), ["root", "leaf-0", "leaf-1", "leaf-2"])
    assert.deepEqual(batchOf(() => 0), ["root", "leaf-0"])
  })

  it("issue 37: a task blamed for more lost slots than maxRetries fails the compute; unblamed losses never do", () => {
    const g = TaskGraph.makeUnsafe([{ key: "a", kernel: k("mix"), args: [1, []] }])
    const s = State.init(g, Int32Array.of(0))
    const d = new Dispatcher(s, { batchSeconds: 1, maxBatch: 4, maxInflight: 1, initialTaskSeconds: 0.001, maxRetries: 2, shared: true })
    let slot = 0
    d.join(slot)
    d.start()
    for (let attempt = 1; attempt <= 3; attempt++) {
      // an unblamed loss first (the worker died between tasks): it costs nothing
      assert.ok(d.take().some((x) => x._tag === "Run"))
      d.lose(slot)
      d.join(++slot)
      const run = d.take().find((x): x is Run => x._tag === "Run")!
      d.lose(slot, { batch: run.batch, index: 0 })
      const f = d.take().find((x): x is Finish => x._tag === "Finish")
      if (attempt <= 2) {
        assert.equal(f, undefined, `failed after ${attempt} blamed losses`)
        d.join(++slot)
      } else {
        assert.equal(f?.failure?._tag, "RetriesExhausted")
        return
      }
    }
    assert.fail("never failed")
  })
})
