import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { Effect } from "effect"
import * as fc from "fast-check"
import * as EngineError from "../../src/engine/EngineError.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"

const noop = Kernel.ref(new URL("../fixtures/kernels/basic.ts", import.meta.url).href, "noop")
const t = (key: string, ...deps: Array<string>): TaskGraph.TaskSpec => ({ key, kernel: noop, args: deps.map(TaskGraph.ref) })

const graphErrorOf = (specs: ReadonlyArray<TaskGraph.TaskSpec>): EngineError.GraphError =>
  Effect.runSync(Effect.flip(TaskGraph.make(specs)))

describe("TaskGraph", () => {
  it("knows dependencies and dependents of each task", () => {
    const g = TaskGraph.makeUnsafe([t("a"), t("b", "a"), t("c", "a", "b"), { key: "d", kernel: noop, args: [TaskGraph.refs(["a", "c", "a"])] }])
    assert.deepEqual(TaskGraph.dependenciesOf(g, "c"), ["a", "b"])
    assert.deepEqual(TaskGraph.dependenciesOf(g, "d"), ["a", "c"])
    assert.deepEqual(TaskGraph.dependentsOf(g, "a").sort(), ["b", "c", "d"])
    assert.deepEqual(TaskGraph.dependentsOf(g, "d"), [])
  })

  it("reports a cycle naming every key on it", () => {
    const e = graphErrorOf([t("x"), t("a", "c", "x"), t("b", "a"), t("c", "b")])
    assert.equal(e.reason._tag, "CycleDetected")
    const cycle = (e.reason as EngineError.CycleDetected).cycle
    assert.equal(cycle[0], cycle[cycle.length - 1])
    assert.deepEqual(new Set(cycle), new Set(["a", "b", "c"]))
    assert.match(e.message, /cycle: .*a.*->/)
  })

  it("reports a self-dependency as a cycle", () => {
    const e = graphErrorOf([t("a", "a")])
    assert.equal(e.reason._tag, "CycleDetected")
    assert.deepEqual((e.reason as EngineError.CycleDetected).cycle, ["a", "a"])
  })

  it("reports a missing dependency naming the task and the missing key", () => {
    const e = graphErrorOf([t("a"), t("b", "a", "zzz")])
    assert.equal(e.reason._tag, "MissingDependency")
    assert.equal((e.reason as EngineError.MissingDependency).key, "b")
    assert.equal((e.reason as EngineError.MissingDependency).missing, "zzz")
    assert.match(e.message, /"b" depends on "zzz"/)
  })

  it("reports a duplicate key", () => {
    const e = graphErrorOf([t("a"), t("b"), t("a")])
    assert.equal(e.reason._tag, "DuplicateKey")
    assert.equal((e.reason as EngineError.DuplicateKey).key, "a")
  })

  it("issue 31 item 3: reports a malformed output declaration naming the task", () => {
    const bad = (output: unknown) => graphErrorOf([{ ...t("a"), output } as TaskGraph.TaskSpec])
    const e = bad({ dtype: "float", shape: [3] })
    assert.equal(e.reason._tag, "InvalidOutput")
    assert.equal((e.reason as EngineError.InvalidOutput).key, "a")
    assert.match(e.message, /^task "a": invalid output declaration: dtype "float" is not one of float32, float64/)
    assert.match(bad({ dtype: "float64", shape: [2.5] }).message, /shape \[2.5\] is not a non-empty list of non-negative integers/)
    assert.match(bad({ dtype: "float64", shape: [] }).message, /shape \[\]/)
    assert.equal(TaskGraph.makeUnsafe([{ ...t("a"), output: { dtype: "int32", shape: [4, 2] } }]).specs[0]!.output?.dtype, "int32")
  })

  it("makeUnsafe throws the GraphError", () => {
    assert.throws(() => TaskGraph.makeUnsafe([t("a", "b")]), (e: unknown) => e instanceof EngineError.GraphError)
  })

  it("derives group names from keys like dask's key_split", () => {
    // the rule itself (TaskGraph.keyName before): test/trace/KeySplit.test.ts
    const g = TaskGraph.makeUnsafe([t("add-17"), { key: "k", kernel: noop, args: [], name: "custom" }])
    assert.deepEqual(g.names, ["add", "custom"])
  })

  it("orders every random DAG topologically", () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.nat(), { maxLength: 3 }), { maxLength: 40 }), (raw) => {
        const specs = raw.map((ds, i) => t(`k${i}`, ...(i === 0 ? [] : ds.map((d) => `k${d % i}`))))
        const g = TaskGraph.makeUnsafe(specs.reverse())
        const pos = new Int32Array(g.size)
        g.order.forEach((i, p) => (pos[i] = p))
        for (let i = 0; i < g.size; i++) {
          for (let j = g.depStart[i]!; j < g.depStart[i + 1]!; j++) assert.ok(pos[g.depList[j]!]! < pos[i]!)
        }
      }),
      { numRuns: 100 }
    )
  })
})
