/**
 * `Kernel.module`: a kernel module named once, its kernels by export name. The type
 * side (misspelt exports are compile errors) is in test/types/Kernel.test.ts.
 */
import assert from "node:assert/strict"
import { inspect } from "node:util"
import { describe, it } from "node:test"
import * as fc from "fast-check"
import * as Chunk from "../../src/engine/Chunk.ts"
import * as Engine from "../../src/engine/Engine.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"

const kernelsUrl = new URL("../../examples/own-pipeline/kernels.ts", import.meta.url)
const K = Kernel.module<typeof import("../../examples/own-pipeline/kernels.ts")>(kernelsUrl)
const whereUrl = new URL("../fixtures/kernels/where.ts", import.meta.url)
const W = Kernel.module<typeof import("../fixtures/kernels/where.ts")>(whereUrl)

describe("Kernel.module", () => {
  it("issue 31 item 10: a kernel named through Kernel.module runs on a worker thread", async () => {
    const data = Float64Array.from([-100, 0, 2, 1e6, -3, 0.5])
    const chunk = Chunk.make("float64", [3, 2], data)
    const graph = TaskGraph.makeUnsafe([
      { key: "where", kernel: W.where, args: [] },
      { key: "log", kernel: K.signedLog, args: [chunk, 2] },
      { key: "max", kernel: K.absMax, args: [TaskGraph.ref("log")] },
      { key: "all", kernel: K.absMaxCombine, args: [TaskGraph.refs(["max", "max"])] }
    ])
    const out = await Engine.computePromise(graph, { workers: 1, keys: ["where", "log", "all"] })
    assert.deepEqual(out.get("where"), { mainThread: false }, "the kernel ran in a worker thread")
    const log = out.get("log") as Chunk.Chunk
    assert.deepEqual(log.shape, [3, 2])
    assert.deepEqual([...log.data], [...data].map((x) => Math.sign(x) * Math.log1p(Math.abs(x) / 2)))
    assert.deepEqual([...(out.get("all") as Float64Array)], [Math.log1p(50), Math.log1p(5e5)])
  })

  it("issue 31 item 10: K.name is Kernel.ref(url, name), interned and frozen, for any name", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }).filter((s) => s !== "then"), (name) => {
        const M = Kernel.module<Record<string, Kernel.KernelFn>>(kernelsUrl.href)
        const r = M[name]!
        assert.deepEqual(r, Kernel.ref(kernelsUrl.href, name))
        assert.equal(Kernel.id(r), `${kernelsUrl.href}#${name}`)
        assert.equal(M[name], r, "the same ref each time")
        assert.ok(Object.isFrozen(r))
      })
    )
    assert.equal(K.signedLog.module, kernelsUrl.href, "a URL object and its href name the same module")
    assert.equal(Kernel.module<typeof import("../../examples/own-pipeline/kernels.ts")>(kernelsUrl.href).signedLog.module, kernelsUrl.href)
  })

  it("issue 31 item 10: the module object is not a thenable, prints its URL, and cannot be written", async () => {
    assert.equal(await Promise.resolve(K), K, "awaiting it gives it back (no `then`)")
    assert.equal(inspect(K), `Kernel.module(${kernelsUrl.href})`)
    assert.throws(() => {
      ;(K as unknown as Record<string, unknown>).signedLog = 1
    }, TypeError)
    assert.equal(K.signedLog.name, "signedLog")
  })

  it("issue 31 item 10: an explicit list of names gives exactly those refs", () => {
    const N = Kernel.module(kernelsUrl, ["signedLog", "absMax"])
    assert.deepEqual(Object.keys(N), ["signedLog", "absMax"])
    assert.deepEqual(N.absMax, Kernel.ref(kernelsUrl.href, "absMax"))
    assert.equal((N as Record<string, unknown>).absMaxCombine, undefined)
    assert.throws(() => Kernel.module(kernelsUrl, [""]), /Kernel\.module\(file:.*kernels\.ts\): kernel names must be non-empty strings, got ""/)
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ minLength: 1 }).filter((n) => n !== "__proto__")), (names) => {
        const M = Kernel.module(kernelsUrl, names)
        assert.deepEqual(Object.keys(M).sort(), [...names].sort()) // integer-like names come first, as in any object
        for (const n of names) assert.deepEqual(M[n], Kernel.ref(kernelsUrl.href, n))
        assert.ok(Object.isFrozen(M))
      })
    )
  })

  it("issue 31 item 10: a path instead of a URL is refused, saying how to name the module", () => {
    assert.throws(
      () => Kernel.module("./kernels.ts"),
      (e: unknown) =>
        e instanceof TypeError && e.message.includes(`"./kernels.ts" is not a URL`) &&
        e.message.includes(`new URL("./kernels.ts", import.meta.url)`)
    )
  })

  it("issue 31 item 10: a misspelt kernel (without the type argument's check) fails naming the export and module", async () => {
    const M = Kernel.module(kernelsUrl, ["signedLg"])
    await assert.rejects(
      Engine.computePromise(TaskGraph.makeUnsafe([{ key: "a", kernel: M.signedLg, args: [] }]), { workers: 0 }),
      (e: Error) => /signedLg/.test(e.message) && /no such export/.test(e.message) && e.message.includes("kernels.ts")
    )
  })
})
