/**
 * Entry point of a worker process started by `LocalCluster`: `node workerMain.js
 * '<WorkerOptions as JSON>'`. Runs the worker until the process is signalled.
 *
 * @since 0.1.0
 * @internal
 */
import { Layer } from "effect"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { layer } from "./workerProcess.ts"
import type { WorkerOptions } from "./workerProcess.ts"

const options = JSON.parse(process.argv[2] ?? "{}") as WorkerOptions
NodeRuntime.runMain(Layer.launch(layer(options)), { disableErrorReporting: false })
