import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { Effect, Exit } from "effect"
import * as Executor from "../../src/engine/Executor.ts"
import { isDslError } from "../../src/dsl/DslError.ts"
import * as Pipeline from "../../src/dsl/Pipeline.ts"
import * as Report from "../../src/report/Report.ts"
import * as Tutorial5 from "../../examples/tutorial5/Tutorial5.ts"

const double = Pipeline.stage("double", ({ x }: { readonly x: number }) => Effect.succeed(x * 2))
const show = Pipeline.stage("show", ({ n }: { readonly n: number }) => Effect.succeed(`n=${n}`))

describe("Pipeline", () => {
  it("runs stages in order, passes outputs on, and logs as DASF does", async () => {
    const lines: Array<string> = []
    const p = Pipeline.make("p", { log: (l) => lines.push(l) })
    const d = p.add(double, { x: 21 })
    p.add(show, { n: d })
    const out = await Effect.runPromise(Effect.provide(p.run(), Executor.layerSync))
    assert.equal(out.get("show"), "n=42")
    assert.match(lines[0]!, /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] INFO - Task 'double': Starting task run\.\.\.$/)
    assert.match(lines[1]!, /INFO - Task 'double': Finished task run$/)
    assert.match(lines.at(-1)!, /INFO - Pipeline run successfully$/)
    assert.equal(p.visualize(), 'digraph "p" {\n  rankdir=LR; node [shape=box, style=rounded];\n  "double";\n  "show";\n  "double" -> "show" [label="n"];\n}')
  })

  it("rejects a duplicate stage and an input from another pipeline before running", () => {
    const p = Pipeline.make("p", { log: () => {} })
    p.add(double, { x: 1 })
    assert.throws(() => p.add(double, { x: 2 }), (e: unknown) => isDslError(e) && /stage "double" is already in the pipeline/.test(e.message))
    const other = Pipeline.make("q", { log: () => {} }).add(double, { x: 1 })
    assert.throws(() => p.add(show, { n: other }), (e: unknown) => isDslError(e) && /stage "show": input "n = q\/double"/.test(e.message))
  })

  it("draws the stage DAG as SVG: a node per stage, an edge per input reference", async () => {
    const p = Pipeline.make("svg", { log: () => {} })
    const a = p.add(double, { x: 1 })
    const b = p.add(Pipeline.stage("twice", ({ x }: { readonly x: number }) => Effect.succeed(x * 2)), { x: a })
    p.add(Pipeline.stage("sum", ({ l, r }: { readonly l: number; readonly r: number }) => Effect.succeed(l + r)), { l: a, r: b })
    const svg = await Effect.runPromise(Report.renderDot(p.visualize()))
    assert.match(svg, /^<svg/)
    assert.equal(svg.match(/class="node"/g)?.length, 3)
    assert.equal(svg.match(/class="edge"/g)?.length, 3)
    for (const n of ["double", "twice", "sum"]) assert.match(svg, new RegExp(`<title>${n}</title>`))
    for (const e of ["double&#45;&gt;twice", "double&#45;&gt;sum", "twice&#45;&gt;sum"]) assert.ok(svg.includes(`<title>${e}</title>`), e)
    const t5 = await Effect.runPromise(Report.renderDot(Tutorial5.make({ samples: 100, chunkRows: 50, log: () => {} }).pipeline.visualize()))
    assert.equal(t5.match(/class="node"/g)?.length, 5)
    assert.equal(t5.match(/class="edge"/g)?.length, 4)
  })

  it("a wrong input type is a compile-time error", () => {
    const p = Pipeline.make("p", { log: () => {} })
    const s = p.add(show, { n: 1 })
    // @ts-expect-error: `show` outputs a string, `double` needs a number
    p.add(double, { x: s })
  })

  it("a failing stage reports its name and the cause, and stops the run", async () => {
    const lines: Array<string> = []
    const p = Pipeline.make("p", { log: (l) => lines.push(l) })
    p.add(Pipeline.stage("boom", () => Effect.fail(new Error("disk on fire"))), {})
    p.add(double, { x: 1 })
    const exit = await Effect.runPromiseExit(Effect.provide(p.run(), Executor.layerSync))
    assert.ok(Exit.isFailure(exit))
    assert.match(String(exit.cause), /stage "boom" failed: disk on fire/)
    assert.ok(!lines.some((l) => l.includes("'double'")))
  })

  it("runs DASF tutorial 5 end to end on worker threads", async () => {
    const r = await Effect.runPromise(
      Effect.provide(Tutorial5.run({ samples: 4_000, chunkRows: 500, log: () => {} }), Executor.layerWorkers({ workers: 2 }))
    )
    assert.ok(r.summary.kmeans.ari >= 0.99)
    assert.ok(r.summary.som.ari >= 0.99)
    assert.deepEqual(r.summary.outputs.map((o) => [o.stage, o.shape, o.chunks]), [["Persist.kmeans", [4000], 8], ["Persist.som", [4000], 8]])
  })
})
