/**
 * Every `tessera` subcommand, one module each. Add a command by writing
 * `src/cli/commands/<name>.ts` and listing it here.
 *
 * @since 0.1.0
 */
import { analyze } from "./analyze.ts"
import { bench } from "./bench.ts"
import { dashboard } from "./dashboard.ts"
import { demo } from "./demo.ts"
import { diagnose } from "./diagnose.ts"
import { diff } from "./diff.ts"
import { reportCommands } from "./report.ts"
import { run } from "./run.ts"
import { sql } from "./sql.ts"
import { scheduler, worker } from "./worker.ts"

export const commands = [demo, run, ...reportCommands, bench, diff, analyze, diagnose, sql, scheduler, worker, dashboard] as const
