/**
 * Entry point of a worker process started by `LocalCluster`: `node workerMain.js
 * '<WorkerOptions as JSON>'`. Imports the `preload` modules, then runs the worker until
 * the process is signalled.
 *
 * @since 0.1.0
 * @internal
 */
import { Layer } from "effect"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { importChecked } from "../kernels.ts"
import { TOKEN_ENV, tokenFromEnv } from "./security.ts"
import { layer } from "./workerProcess.ts"
import type { WorkerOptions } from "./workerProcess.ts"

const options = JSON.parse(process.argv[2] ?? "{}") as WorkerOptions
// the cluster token, from the environment its driver set (then gone from it: kernels and
// the processes they start do not inherit it)
const given = options.tls === true ? tokenFromEnv() : undefined
delete process.env[TOKEN_ENV]
if (given !== undefined && "problem" in given) throw new Error(given.problem)
if (options.tls === true && given === undefined) throw new Error(`a worker started with tls needs ${TOKEN_ENV}`)
// before joining: an import blocks this process's event loop (pings, shard locks) while it runs
// each URL through the one module check (kernels.ts): file: URLs under the allowed folders
await Promise.all((options.preload ?? []).map((u) => importChecked(u, "preload")))
NodeRuntime.runMain(Layer.launch(layer(options, given?.token)), { disableErrorReporting: false })
