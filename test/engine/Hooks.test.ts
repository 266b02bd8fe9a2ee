/**
 * Hooks: which callbacks a compute sees — the Effect context's (`Hooks.layer`,
 * `Hooks.provide`), only within their scope, and the global ones (`Hooks.register`)
 * everywhere.
 *
 * @since 0.1.0
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { Effect, Layer } from "effect"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { k } from "./graphs.ts"

/** A chain of `n` async tasks named `{prefix}-{i}`. */
const chain = (prefix: string, n = 6): TaskGraph.TaskGraph => {
  const specs: Array<TaskGraph.TaskSpec> = []
  for (let i = 0; i < n; i++) {
    specs.push({ key: `${prefix}-${i}`, kernel: k("mixAsync"), args: [i, i === 0 ? [] : [TaskGraph.ref(`${prefix}-${i - 1}`)]] })
  }
  return TaskGraph.makeUnsafe(specs)
}

const keysSeen = () => {
  const seen: Array<string> = []
  return { seen, callbacks: { posttask: (key: string) => void seen.push(key) } satisfies Hooks.Callbacks }
}

const run = <A, E>(effect: Effect.Effect<A, E, Executor.Executor>) => Effect.runPromise(effect.pipe(Effect.provide(Executor.layerSync)))

describe("Hooks", () => {
  it("a compute sees the callbacks a layer provides only within that layer's scope", async () => {
    const a = keysSeen()
    await run(Effect.gen(function*() {
      yield* Engine.compute(chain("before", 2))
      yield* Engine.compute(chain("inside", 2)).pipe(Effect.provide(Hooks.layer(a.callbacks)))
      yield* Engine.compute(chain("after", 2))
    }))
    assert.deepEqual(a.seen, ["inside-0", "inside-1"])
    assert.deepEqual(Hooks.registered(), [])
  })

  it("two concurrent computes with different profiler layers don't see each other's callbacks", async () => {
    const a = keysSeen()
    const b = keysSeen()
    const both = await run(Effect.all([
      Engine.compute(chain("a")).pipe(Effect.provide(Hooks.layer(a.callbacks))),
      Engine.compute(chain("b")).pipe(Effect.provide(Hooks.layer(b.callbacks)))
    ], { concurrency: "unbounded" }))
    assert.equal(both.length, 2)
    assert.deepEqual(a.seen, ["a-0", "a-1", "a-2", "a-3", "a-4", "a-5"])
    assert.deepEqual(b.seen, ["b-0", "b-1", "b-2", "b-3", "b-4", "b-5"])
  })

  it("nested layers and Hooks.provide add to the callbacks, in order, once each", async () => {
    const order: Array<string> = []
    const cb = (name: string): Hooks.Callbacks => ({ start: () => void order.push(name) })
    const one = cb("one")
    const two = cb("two")
    const three = cb("three")
    await run(Engine.compute(chain("n", 1), { callbacks: [three, one] }).pipe(
      Hooks.provide(two, one),
      Effect.provide(Hooks.layer(one))
    ))
    assert.deepEqual(order, ["one", "two", "three"])
    order.length = 0
    // stacked layers (provideMerge) both count
    await run(Engine.compute(chain("m", 1)).pipe(Effect.provide(Hooks.layer(two).pipe(Layer.provideMerge(Hooks.layer(one))))))
    assert.deepEqual(order, ["one", "two"])
  })

  it("a globally registered callback sees every compute, with or without a layer, until unregistered", async () => {
    const g = keysSeen()
    const a = keysSeen()
    const unregister = Hooks.register(g.callbacks)
    try {
      await run(Engine.compute(chain("plain", 1)))
      await run(Engine.compute(chain("layered", 1)).pipe(Effect.provide(Hooks.layer(a.callbacks))))
      await Engine.computePromise(chain("promise", 1), { workers: 0 })
    } finally {
      unregister()
    }
    await run(Engine.compute(chain("later", 1)))
    assert.deepEqual(g.seen, ["plain-0", "layered-0", "promise-0"])
    assert.deepEqual(a.seen, ["layered-0"])
  })

  it("Hooks.registerScoped registers globally until its scope closes", async () => {
    const g = keysSeen()
    await run(Effect.scoped(Effect.gen(function*() {
      yield* Hooks.registerScoped(g.callbacks)
      yield* Effect.promise(() => Engine.computePromise(chain("scoped", 1), { workers: 0 }))
    })))
    await Engine.computePromise(chain("after", 1), { workers: 0 })
    assert.deepEqual(g.seen, ["scoped-0"])
  })
})
