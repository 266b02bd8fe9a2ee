/**
 * The `tessera` command: one Effect CLI (`effect/cli`) whose subcommands live in
 * `src/cli/commands/`, one file each. This file only wires them together and runs
 * them on Node's platform services.
 *
 * @since 0.1.0
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Effect } from "effect"
import { Command } from "effect/cli"
import { commands } from "./commands/index.ts"

const tessera = Command.make("tessera").pipe(
  Command.withDescription("Parallel data pipelines over Arrow chunks, with a profiler built in."),
  Command.withSubcommands(commands)
)

Command.run(tessera, { version: "0.1.0" }).pipe(
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain
)
