/**
 * Per-stage summary (Tessera's own analysis): where a pipeline run's time went, stage by
 * stage, from the `stage` each task carries (Tessera's `Compute` arg; the pipeline stage
 * whose compute made the task).
 *
 * One row per stage, in the order the stages started; tasks without a stage (a trace
 * written by DASF, or computes outside a pipeline stage) form one `(no stage)` row, last,
 * so a trace without stages gives a single line covering every task. An empty trace
 * gives no rows.
 *
 * Columns: Stage; Tasks; Task time (s) (sum of the tasks' durations: worker time, can
 * exceed the wall time when tasks ran in parallel); Start (s from begin) and Wall (s)
 * (the span from the stage's first task start to its last task end, relative to the
 * run's first event); Bytes In (sum over its tasks of their inputs' sizes, as
 * `function_summary`); Bytes Out (sum of its tasks' result sizes); Share of run (%)
 * (Wall / the run's wall time, first event to last, driver segments included); Critical
 * path (%) (the stage's tasks' share of the critical path's length; driver steps of the
 * path belong to no stage).
 *
 * Leaves out: the driver's time per stage (driver segments carry no stage).
 *
 * @since 0.1.0
 */
import type { Table } from "apache-arrow"
import { criticalPathSteps } from "./CriticalPath.ts"
import { driverSegments } from "./Driver.ts"
import { buildTable, codesOf } from "./internal/access.ts"
import { inputBytes, str, type Tables, taskView } from "./internal/taskView.ts"

/**
 * The label of the row of tasks that carry no stage.
 *
 * @since 0.1.0
 * @category constants
 */
export const noStage = "(no stage)"

/**
 * Stage, Tasks, Task time (s), Start (s from begin), Wall (s), Bytes In, Bytes Out,
 * Share of run (%), Critical path (%): one row per stage (see the module header).
 *
 * @since 0.1.0
 * @category analysis
 */
export const stageSummary = (tables: Tables): Table => {
  const v = taskView(tables.tasks)
  const stage = codesOf(tables.tasks.getChild("stage"), v.n)
  // group per stage code; code -1 (no stage) is group S
  const S = stage.size
  const count = new Int32Array(S + 1)
  const time = new Float64Array(S + 1)
  const first = new Float64Array(S + 1).fill(Infinity)
  const last = new Float64Array(S + 1).fill(-Infinity)
  const bin = new Float64Array(S + 1)
  const bout = new Float64Array(S + 1)
  const input = inputBytes(v)
  let t0 = Infinity
  let t1 = -Infinity
  for (let i = 0; i < v.n; i++) {
    const c = stage.codes[i]
    const g = c < 0 ? S : c
    count[g]++
    if (v.duration[i] === v.duration[i]) time[g] += v.duration[i]
    if (v.start[i] < first[g]) first[g] = v.start[i]
    if (v.end[i] > last[g]) last[g] = v.end[i]
    bin[g] += input[i]
    if (v.size[i] === v.size[i]) bout[g] += v.size[i]
    if (v.start[i] < t0) t0 = v.start[i]
    if (v.end[i] > t1) t1 = v.end[i]
  }
  for (const s of driverSegments(tables.driver)) {
    if (s.start < t0) t0 = s.start
    if (s.end > t1) t1 = s.end
  }
  const wall = t1 > t0 ? t1 - t0 : 0
  const onPath = new Float64Array(S + 1)
  let pathLength = 0
  if (v.n > 0) {
    const path = criticalPathSteps(tables)
    pathLength = path.length
    for (const step of path.steps) {
      if (step._tag !== "Task") continue
      const c = stage.codes[step.row]
      onPath[c < 0 ? S : c] += Math.max(0, v.duration[step.row] || 0)
    }
  }
  const groups: Array<number> = []
  for (let g = 0; g < S; g++) if (count[g] > 0) groups.push(g)
  groups.sort((a, b) => first[a] - first[b] || (str(stage, a)! < str(stage, b)! ? -1 : 1))
  if (count[S] > 0) groups.push(S)
  const span = (g: number) => Math.max(0, last[g] - first[g])
  return buildTable({
    "Stage": { kind: "string", values: groups.map((g) => (g === S ? noStage : str(stage, g))) },
    "Tasks": { kind: "int", values: groups.map((g) => count[g]) },
    "Task time (s)": { kind: "float", values: groups.map((g) => time[g]) },
    "Start (s from begin)": { kind: "float", values: groups.map((g) => first[g] - t0) },
    "Wall (s)": { kind: "float", values: groups.map(span) },
    "Bytes In": { kind: "float", values: groups.map((g) => bin[g]) },
    "Bytes Out": { kind: "float", values: groups.map((g) => bout[g]) },
    "Share of run (%)": { kind: "float", values: groups.map((g) => (wall > 0 ? (span(g) / wall) * 100 : NaN)) },
    "Critical path (%)": { kind: "float", values: groups.map((g) => (pathLength > 0 ? (onPath[g] / pathLength) * 100 : NaN)) }
  })
}
