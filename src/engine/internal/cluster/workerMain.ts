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
import { layer } from "./workerProcess.ts"
import type { WorkerOptions } from "./workerProcess.ts"

const options = JSON.parse(process.argv[2] ?? "{}") as WorkerOptions
// before joining: an import blocks this process's event loop (pings, shard locks) while it runs
// each URL through the one module check (kernels.ts): file: URLs under the allowed folders
await Promise.all((options.preload ?? []).map((u) => importChecked(u, "preload")))
NodeRuntime.runMain(Layer.launch(layer(options)), { disableErrorReporting: false })
