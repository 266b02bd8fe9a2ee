/**
 * The dashboard's charts compiled off the engine's thread: a worker thread that imports
 * the report's chart definitions (`report/Charts.ts`, Vega-Lite's compiler: 30–500 ms a
 * compile on a loaded machine) and compiles them once per page width; the server
 * reshapes the task stream for each run's shape (`Charts.reshapeStreamVega`, no
 * compile), so a page opening or a new function appearing never stalls the driver that
 * dispatches tasks, nor spends a core compiling. Started on the first page, ended with the server (`Dashboard.ts`).
 *
 * @since 0.1.0
 */
import { parentPort } from "node:worker_threads"
import * as Charts from "../report/Charts.ts"
import { renderDotPromise } from "../report/Graphviz.ts"
import { sanitize } from "../report/SafeSvg.ts"

/**
 * What the server asks for: the charts at one width.
 *
 * @since 0.1.0
 * @category models
 */
export interface SpecRequest {
  readonly id: number
  readonly width?: number
  /** a stage DAG to lay out (Graphviz), instead of the charts */
  readonly dot?: string
}

/**
 * A shape with every part of the task stream's spec present (a function, a driver
 * activity, transfers and errors), compiled once per width and reshaped for each run's
 * shape (`Charts.reshapeStreamVega`).
 *
 * @since 0.1.0
 * @category constants
 */
export const templateShape: Charts.StreamShape = { functions: ["f"], activities: ["wait"], rows: ["driver"], wall: 1, moved: true, failed: true, top: undefined }

/**
 * The compiled charts at `width`: the task stream's template and the timelines (their
 * series' domains from the data, so no run's shape is in them).
 *
 * @since 0.1.0
 * @category formatting
 */
export const compileSpecs = (width: number) => {
  const wall = 1
  const timelines = Charts.timelinesSpec([
    Charts.timelineSpec("memory", "bytes", "Managed memory per worker", "MiB", "worker", wall, width),
    Charts.timelineSpec("memtotal", "bytes", "Managed memory, all workers (MemorySampler's view)", "MiB", "scope", wall, width),
    Charts.timelineSpec("busy", "share", "Busy share per worker", "%", "worker", wall, width),
    Charts.timelineSpec("res_cpu", "cpu", "CPU per host", "%", "host", wall, width),
    Charts.timelineSpec("res_mem", "mem", "Memory used per host", "GiB", "host", wall, width)
  ])
  return { stream: Charts.taskStreamVegaOf(templateShape, width), timelines: Charts.toVega(timelines, { wall }) }
}

// loaded: the server waits for this before the run starts (Vega-Lite's modules take a
// core for a second on a loaded machine: not during the run)
parentPort?.postMessage({ ready: true })

parentPort?.on("message", (r: SpecRequest | { readonly quit: true }) => {
  // the server closed: the thread ends by itself (terminate() mid-import crashed V8 once)
  if ("quit" in r) return void parentPort!.close()
  const fail = (e: unknown) => parentPort!.postMessage({ id: r.id, ok: false, error: e instanceof Error ? e.message : String(e) })
  // the stage DAG: the report's layout and its allow-list (SafeSvg: a DOT from a run is data)
  if (r.dot !== undefined) return void renderDotPromise(r.dot).then((svg) => parentPort!.postMessage({ id: r.id, ok: true, specs: sanitize(svg) }), fail)
  try {
    parentPort!.postMessage({ id: r.id, ok: true, specs: compileSpecs(r.width ?? 940) })
  } catch (e) {
    fail(e)
  }
})
