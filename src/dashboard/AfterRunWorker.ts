/**
 * The dashboard's after-the-run work off the server's thread: one worker thread per job
 * that reads trace databases and answers one panel — the Findings tab's (`tessera
 * diagnose`'s findings, `Diagnosis.ts`) or the Profile tab's (the report's flame
 * payload, `Flame.ts`) — then ends. The server keeps answering pages meanwhile (a 1M-event
 * trace's diagnosis takes seconds).
 *
 * @since 0.1.0
 */
import { parentPort, Worker } from "node:worker_threads"

/**
 * A job: which panel, of which databases, on which time axis (`t0`, epoch seconds).
 *
 * @since 0.1.0
 * @category models
 */
export type AfterRunJob =
  | { readonly kind: "findings"; readonly files: ReadonlyArray<string>; readonly t0: number }
  | { readonly kind: "flame"; readonly files: ReadonlyArray<string>; readonly t0: number; readonly maxSamples: number }

/**
 * Runs `job` in a worker thread of its own; resolves with the panel it answers, rejects
 * with its error.
 *
 * @since 0.1.0
 * @category constructors
 */
export const runAfterRun = <A>(job: AfterRunJob): Promise<A> =>
  new Promise<A>((resolve, reject) => {
    const self = import.meta.url
    const w = new Worker(new URL(`./AfterRunWorker${self.slice(self.lastIndexOf("."))}`, self))
    w.unref()
    let settled = false
    w.once("message", (m: { ok: boolean; panel?: A; error?: string }) => {
      settled = true
      m.ok ? resolve(m.panel!) : reject(new Error(m.error))
    })
    w.once("error", (e) => {
      settled = true
      reject(e)
    })
    w.once("exit", (code) => {
      if (!settled) reject(new Error(`the dashboard's worker exited (${code}) before answering`))
    })
    w.postMessage(job)
  })

const work = async (job: AfterRunJob): Promise<unknown> => {
  if (job.kind === "findings") {
    const [{ diagnoseFilesPromise }, { panelOf }] = await Promise.all([import("../analysis/Diagnose.ts"), import("./Diagnosis.ts")])
    return panelOf(await diagnoseFilesPromise(job.files), job.t0, `tessera diagnose -d ${job.files.join(" ")}`)
  }
  const [{ loadProfilePromise }, { flamePayload }] = await Promise.all([import("../analysis/Profile.ts"), import("../report/FlameGraph.ts")])
  const d = await loadProfilePromise(job.files)
  const source = job.files.join(" ")
  const n = d.samples.time.length
  return n === 0
    ? { status: "none", reason: `no stack samples in ${source} (a profile written with --no-sample, or no StatisticalProfiler database)` }
    : { status: "ready", source, samples: n, payload: flamePayload(d, job.t0, { maxSamples: job.maxSamples }) }
}

const port = parentPort
if (port !== null) {
  port.once("message", (job: AfterRunJob) => {
    work(job).then(
      (panel) => port.postMessage({ ok: true, panel }),
      (e: unknown) => port.postMessage({ ok: false, error: e instanceof Error ? e.message : String(e) })
    ).finally(() => port.close())
  })
}
