/**
 * The driver's own cost per task, as CPU time of the main thread (less sensitive to a
 * loaded machine than wall time): no-op graphs on 2 worker threads (the pool's dispatch,
 * settling and hooks) and on the in-process executor (everything but kernels). The best
 * of `reps` computes after one warm-up.
 *
 * To compare two builds in one run, point it at each checkout's sources (a `git worktree`
 * of the baseline) and alternate:
 *
 * ```
 * node bench/engine/dispatchCost.ts . fanout 100000 6
 * node bench/engine/dispatchCost.ts /tmp/base fanout 100000 6
 * ```
 *
 * Prints one JSON line: { root, graph, tasks, poolMainCpuMicros, poolWallMicros, syncCpuMicros, syncWallMicros }.
 */
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { Effect, ManagedRuntime } from "effect"

const [rootArg = ".", shape = "fanout", nArg = "100000", repsArg = "6"] = process.argv.slice(2)
const root = pathToFileURL(resolve(rootArg)).href
// the other checkout's modules, typed as this one's (the same API)
const B = (await import(`${root}/bench/engine/BenchGraphs.ts`)) as typeof import("./BenchGraphs.ts")
const Executor = (await import(`${root}/src/engine/Executor.ts`)) as typeof import("../../src/engine/Executor.ts")
const Engine = (await import(`${root}/src/engine/Engine.ts`)) as typeof import("../../src/engine/Engine.ts")
const g = B.build(shape as "fanout" | "tree" | "chain", Number(nArg))
const reps = Number(repsArg)

/** Best main-thread CPU µs and wall µs a task over `reps` computes (after one warm-up). */
const best = async (run: () => Promise<unknown>, cpu: () => { user: number; system: number }) => {
  let c = Infinity
  let w = Infinity
  for (let r = 0; r <= reps; r++) {
    const c0 = cpu()
    const t0 = performance.now()
    await run()
    const c1 = cpu()
    if (r === 0) continue
    c = Math.min(c, (c1.user + c1.system - c0.user - c0.system) / g.graph.size)
    w = Math.min(w, ((performance.now() - t0) * 1000) / g.graph.size)
  }
  return [c, w] as const
}

const rt = ManagedRuntime.make(Executor.layerWorkers({ workers: 2 }))
const [poolCpu, poolWall] = await best(() => rt.runPromise(Engine.compute(g.graph, { keys: g.keys })), () => process.threadCpuUsage())
await rt.dispose()
const [syncCpu, syncWall] = await best(
  () => Effect.runPromise(Engine.compute(g.graph, { keys: g.keys }).pipe(Effect.provide(Executor.layerSync))),
  () => process.threadCpuUsage()
)
const round = (x: number) => Math.round(x * 1000) / 1000
console.log(JSON.stringify({
  root: rootArg,
  graph: shape,
  tasks: g.graph.size,
  poolMainCpuMicros: round(poolCpu),
  poolWallMicros: round(poolWall),
  syncCpuMicros: round(syncCpu),
  syncWallMicros: round(syncWall)
}))
