/**
 * A worker's failures as the driver's typed errors: the reasons a worker forwards with
 * their fields (`RunReply.error`) rebuilt as the same class and message, which of them
 * fail a compute as the task's own fault, and the error for an argument the wire cannot
 * carry.
 *
 * @since 0.1.0
 * @internal
 */
import * as EngineError from "../../EngineError.ts"
import * as Kernel from "../../Kernel.ts"
import type { Job } from "../job.ts"
import { unsendable } from "../kernels.ts"
import type { RunReply } from "./protocol.ts"

/**
 * ArgumentNotSendable for the first argument of `tasks` that cannot be serialised (`cause`:
 * the serialiser's error).
 *
 * @since 0.1.0
 * @internal
 */
export const notSendable = (g: Job["graph"], tasks: ReadonlyArray<number>, cause: unknown): EngineError.ComputeError => {
  const detail = cause instanceof Error ? cause.message : String(cause)
  for (const i of tasks) {
    const sp = g.specs[i]!
    for (let a = 0; a < sp.args.length; a++) {
      const what = unsendable(sp.args[a])
      if (what !== undefined) return EngineError.argumentNotSendable(sp.key, Kernel.describe(sp.kernel), sp.stage, a, what, detail)
    }
  }
  const sp = g.specs[tasks[0]!]!
  return EngineError.argumentNotSendable(sp.key, Kernel.describe(sp.kernel), sp.stage, 0, "a value that cannot be serialised", detail)
}

/** A worker's failures that fail the compute as themselves (the task's own fault, not the cluster's). */
export const TASK_FAILURES: ReadonlySet<string> = new Set(["KernelFailed", "KernelNotFound", "BadOutput", "ArgumentNotSendable", "ModuleRefused", "WorkerMemoryExceeded", "HeldBytesExceeded"])

/**
 * The worker's typed error, rebuilt from its fields (`RunReply.error.fields`): the same
 * class and message as the worker's; a KernelFailed names the kernel's `file:line`.
 */
export const toComputeError = (err: NonNullable<RunReply["error"]>): EngineError.ComputeError => {
  const f = (err.fields ?? {}) as Record<string, never>
  const kernel = typeof f.kernel === "string" ? f.kernel as string : Kernel.describe({ module: err.module, name: err.name })
  const stage = typeof f.stage === "string" ? { stage: f.stage as string } : {}
  let reason: EngineError.ComputeError["reason"]
  switch (err.tag) {
    case "KernelNotFound":
      reason = new EngineError.KernelNotFound({ key: err.key, module: err.module, name: err.name, message: err.message })
      break
    case "BadOutput":
      reason = new EngineError.BadOutput({ key: err.key, kernel, ...stage, declared: String(f.declared ?? "?"), actual: String(f.actual ?? "?"), message: err.message })
      break
    case "ArgumentNotSendable":
      reason = new EngineError.ArgumentNotSendable({ key: err.key, kernel, ...stage, argument: Number(f.argument ?? 0), what: String(f.what ?? "?"), message: err.message })
      break
    case "HeldBytesExceeded":
      reason = new EngineError.HeldBytesExceeded({ key: err.key, worker: String(f.worker ?? ""), limit: Number(f.limit ?? 0), held: Number(f.held ?? 0), message: err.message })
      break
    case "ModuleRefused":
      reason = new EngineError.ModuleRefused({ key: err.key, module: err.module, name: err.name, why: String(f.why ?? ""), message: err.message })
      break
    case "WorkerMemoryExceeded":
      reason = new EngineError.WorkerMemoryExceeded({ key: err.key, kernel, limit: Number(f.limit ?? 0), held: Number(f.held ?? 0), message: err.message })
      break
    default: {
      // the worker's message names the kernel's file:line already; one from an older
      // worker (no fields) is rebuilt with the kernel's module, so it does too
      if (typeof f.message === "string") {
        const at = typeof f.at === "string" ? f.at as string : EngineError.kernelFrame(err.stack, err.module)
        reason = new EngineError.KernelFailed({ key: err.key, kernel, stack: err.stack, ...(at !== undefined ? { at } : {}), message: err.message })
      } else return EngineError.kernelFailed(err.key, kernel, err.message, err.stack, err.module)
    }
  }
  return new EngineError.ComputeError({ reason, message: reason.message })
}
