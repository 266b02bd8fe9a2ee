/**
 * The dashboard's charts compiled off the engine's thread: a worker thread that imports
 * the report's chart definitions (`report/Charts.ts`, Vega-Lite's compiler: 30–500 ms a
 * compile on a loaded machine) and compiles them for each shape the server asks for, so
 * a page opening or a new function appearing never stalls the driver that dispatches
 * tasks. Started on the first page, ended with the server (`Dashboard.ts`).
 *
 * @since 0.1.0
 */
import { parentPort } from "node:worker_threads"
import * as Charts from "../report/Charts.ts"

/**
 * What the server asks for: the stream's shape, the worker and host series, the width.
 *
 * @since 0.1.0
 * @category models
 */
export interface SpecRequest {
  readonly id: number
  readonly shape: Charts.StreamShape
  readonly workers: ReadonlyArray<string>
  readonly hosts: ReadonlyArray<string>
  readonly width: number
}

/**
 * The compiled specs: the task stream, the timelines, and the labels the page colours by.
 *
 * @since 0.1.0
 * @category rendering
 */
export const compileSpecs = (r: Omit<SpecRequest, "id">) => {
  const { shape, width, workers, hosts } = r
  const wall = shape.wall
  const timelines = Charts.timelinesSpec([
    Charts.timelineSpec("memory", "bytes", "Managed memory per worker", "MiB", "worker", wall, width, workers),
    Charts.timelineSpec("memtotal", "bytes", "Managed memory, all workers (MemorySampler's view)", "MiB", "scope", wall, width),
    Charts.timelineSpec("busy", "share", "Busy share per worker", "%", "worker", wall, width, workers),
    Charts.timelineSpec("res_cpu", "cpu", "CPU per host", "%", "host", wall, width, hosts),
    Charts.timelineSpec("res_mem", "mem", "Memory used per host", "GiB", "host", wall, width, hosts)
  ])
  return {
    rows: [...shape.rows],
    functions: [...shape.functions],
    top: shape.top === undefined ? null : Array.from(shape.top),
    labels: { transfer: Charts.transferLabel, dataTransfer: Charts.dataTransferLabel, erred: Charts.erredLabel, other: Charts.otherFunctionsLabel, driver: Charts.driverLabel("") },
    stream: Charts.taskStreamVegaOf(shape, width),
    timelines: Charts.toVega(timelines, { wall })
  }
}

parentPort?.on("message", (r: SpecRequest) => {
  try {
    parentPort!.postMessage({ id: r.id, ok: true, specs: compileSpecs(r) })
  } catch (e) {
    parentPort!.postMessage({ id: r.id, ok: false, error: e instanceof Error ? e.message : String(e) })
  }
})
