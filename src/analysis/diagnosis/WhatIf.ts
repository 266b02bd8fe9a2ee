/**
 * What-ifs on the recorded critical path: re-time its steps (a straggler at its group's
 * median, the latency before a stage's tasks divided by a fusion factor, a worker's
 * start-up at zero, ...) and say how much shorter the path gets. The path is the
 * recorded one: another chain of the graph may become critical once this one shrinks,
 * so a saving is an upper bound on what the change wins; every finding says so in its
 * assumptions line.
 *
 * @since 0.1.0
 */
import type { CriticalPathSteps, CriticalStep } from "../CriticalPath.ts"
import type { TaskView } from "../internal/taskView.ts"

/**
 * A step's recorded duration (seconds, at least 0).
 *
 * @since 0.1.0
 * @category analysis
 */
export const stepDuration = (v: TaskView, s: CriticalStep): number =>
  Math.max(0, (s._tag === "Task" ? v.duration[s.row]! : s._tag === "Driver" ? s.segment.end - s.segment.start : s.end - s.start) || 0)

/**
 * Seconds the path would lose if each step took `retime(step, index, duration)` seconds
 * instead of its recorded `duration` (`undefined`: unchanged). Never negative: a what-if
 * that lengthens a step saves 0.
 *
 * @since 0.1.0
 * @category analysis
 */
export const saving = (
  v: TaskView,
  path: CriticalPathSteps,
  retime: (s: CriticalStep, i: number, duration: number) => number | undefined
): number => {
  let saved = 0
  path.steps.forEach((s, i) => {
    const d = stepDuration(v, s)
    const t = retime(s, i, d)
    if (t !== undefined && t < d) saved += d - Math.max(0, t)
  })
  return saved
}

/**
 * For each step, the task step that follows it (its row), -1 where the next step is not
 * a task: the latency step before a task belongs to that task when a what-if shrinks
 * the task's stage.
 *
 * @since 0.1.0
 * @category analysis
 */
export const nextTaskRow = (path: CriticalPathSteps): Int32Array => {
  const out = new Int32Array(path.steps.length).fill(-1)
  for (let i = 0; i + 1 < path.steps.length; i++) {
    const s = path.steps[i + 1]!
    if (s._tag === "Task") out[i] = s.row
  }
  return out
}
