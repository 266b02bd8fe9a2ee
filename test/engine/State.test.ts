import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as State from "../../src/engine/State.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { k } from "./graphs.ts"

const t = (key: string, ...deps: Array<string>): TaskGraph.TaskSpec => ({ key, kernel: k("noop"), args: deps.map(TaskGraph.ref) })
const keysOf = (s: State.SchedulerState, flags: Uint8Array): Array<string> => s.graph.keys.filter((_, i) => flags[i] === 1)

describe("State", () => {
  it("follows the worked example of the module header", () => {
    const g = TaskGraph.makeUnsafe([t("a"), t("b", "a"), t("c", "a")])
    const idx = (key: string) => g.index.get(key)!
    const s = State.init(g, Int32Array.from([idx("b"), idx("c")]))
    assert.deepEqual([...s.waiting], [0, 1, 1])
    assert.deepEqual([...s.waitingData], [2, 1, 1])
    assert.equal(s.readyCount, 1)
    const a = State.popReady(s)
    assert.equal(g.keys[a], "a")
    assert.deepEqual(keysOf(s, s.running), ["a"])
    State.finishTask(s, a, "A")
    assert.equal(s.readyCount, 2)
    const first = State.popReady(s)
    State.finishTask(s, first, "first")
    assert.equal(s.waitingData[idx("a")], 1)
    assert.equal(s.cache[idx("a")], "A")
    const second = State.popReady(s)
    assert.equal(State.statusOf(s, g.keys[second]!), "running")
    State.finishTask(s, second, "second")
    assert.deepEqual(keysOf(s, s.released), ["a"])
    assert.equal(s.cache[idx("a")], undefined)
    assert.equal(State.statusOf(s, "a"), "released")
    assert.equal(State.statusOf(s, "b"), "memory")
    assert.ok(State.isDone(s))
  })

  it("culls tasks the requested keys do not need", () => {
    const g = TaskGraph.makeUnsafe([t("a"), t("b", "a"), t("unused", "a")])
    const s = State.init(g, Int32Array.from([g.index.get("b")!]))
    assert.equal(s.total, 2)
    assert.equal(State.statusOf(s, "unused"), "not-needed")
    assert.equal(s.waitingData[g.index.get("a")!], 1)
  })

  it("pops ready tasks last-in first-out, so it goes depth-first", () => {
    const g = TaskGraph.makeUnsafe([t("x1"), t("x2", "x1"), t("y1"), t("y2", "y1")])
    const s = State.init(g, Int32Array.from([g.index.get("x2")!, g.index.get("y2")!]))
    const order: Array<string> = []
    for (let i = State.popReady(s); i >= 0; i = State.popReady(s)) {
      order.push(g.keys[i]!)
      State.finishTask(s, i, null)
    }
    assert.deepEqual(order, ["x1", "x2", "y1", "y2"])
  })

  it("puts a requeued task back on ready", () => {
    const g = TaskGraph.makeUnsafe([t("a")])
    const s = State.init(g, Int32Array.from([0]))
    const i = State.popReady(s)
    State.requeue(s, i)
    assert.equal(s.runningCount, 0)
    assert.equal(State.popReady(s), i)
  })
})
