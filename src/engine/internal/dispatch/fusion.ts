/**
 * Fusion, the dispatcher's way to make a chain cost one round trip instead of one a
 * level: while a batch is built, a task that is not ready yet but all of whose
 * unfinished inputs are in the batch joins it (`State.markFused`: it shows as running);
 * the slot runs the batch in order and passes those inputs over locally.
 *
 * @since 0.1.0
 * @internal
 */
import * as State from "../../State.ts"

/**
 * What fusion reads besides the state record: scratch arrays of the graph's size (all 0
 * between calls), each task's slot kind, and the dispatcher's fusion settings.
 *
 * @since 0.1.0
 * @internal
 */
export interface Fuser {
  readonly state: State.SchedulerState
  /** per task: inputs of it in the batch being built */
  readonly hits: Int32Array
  /** per task: 1 while in the batch being built */
  readonly member: Uint8Array
  readonly kindOf: Uint8Array | null
  /** see `DispatcherOptions.fusable` */
  readonly fusable: ((d: number, member: Uint8Array) => boolean) | undefined
  /** see `DispatcherOptions.taskCost` */
  readonly taskCost: ((task: number) => number) | undefined
  /** whether the finished inputs of `d` can be had (null: always; results are shared) */
  readonly inputsHeld: ((d: number) => boolean) | null
}

/**
 * Appends to `list` (a batch for a slot of `kind`) the tasks not ready yet all of whose
 * unfinished inputs are in it, of that kind, up to `limit` tasks. A member's first fused
 * dependent continues its line (a chain, a reduction); each further one widens the
 * batch, which idle slots could have shared: those take from `width` seconds
 * (`taskCost` each) while it lasts.
 *
 * @since 0.1.0
 * @internal
 */
export const fuse = (f: Fuser, kind: number, list: Array<number>, limit: number, width: number): void => {
  const s = f.state
  const { hits, member, kindOf, fusable, taskCost: costOf, inputsHeld } = f
  const dependents = s.dependents
  for (const i of list) member[i] = 1
  const touched: Array<number> = []
  for (let q = 0; q < list.length && list.length < limit; q++) {
    const i = list[q]!
    let continued = false
    for (let j = dependents.start[i]!, e = dependents.start[i + 1]!; j < e && list.length < limit; j++) {
      const d = dependents.list[j]!
      if (!s.needed[d] || s.running[d] || s.finished[d]) continue
      if (kindOf !== null && kindOf[d] !== kind) continue
      if (hits[d] === 0) touched.push(d)
      if (++hits[d]! !== s.waiting[d]) continue
      if (continued && width !== Infinity && (width <= 0 || (costOf?.(d) ?? 0) > width)) continue
      if (inputsHeld !== null && !inputsHeld(d)) continue
      if (fusable !== undefined && !fusable(d, member)) continue
      if (continued && width !== Infinity) width -= costOf?.(d) ?? 0
      continued = true
      State.markFused(s, d)
      list.push(d)
      member[d] = 1
    }
  }
  for (const d of touched) hits[d] = 0
  for (const i of list) member[i] = 0
}
