/**
 * Where results live, for a dispatcher whose results stay on the slots that made them
 * (the cluster): per task, the live slots holding its result and its bytes. From it the
 * dispatcher decides readiness (every input has a live holder), placement (the slot
 * holding the most bytes of a task's inputs) and recovery (which lost results to
 * recompute, with the lost inputs they need); and the releases waiting to be sent, of
 * results nobody needs any more.
 *
 * @since 0.1.0
 * @internal
 */
import type * as State from "../../State.ts"
import type { TaskGraph } from "../../TaskGraph.ts"
import type { Instruction } from "./instructions.ts"

const noHolders: ReadonlyArray<number> = []

/**
 * The holders of every task's result.
 *
 * @since 0.1.0
 * @internal
 */
export class Holders {
  /** per task, the live slots holding its result */
  private readonly list: Array<Array<number> | undefined>
  /** per task, its result's bytes (placement weight) */
  private readonly bytes: Float64Array

  /** Room for `n` tasks (0: results are shared, nothing is tracked). */
  constructor(n: number) {
    this.list = new Array(n)
    this.bytes = new Float64Array(n)
  }

  /** The live slots holding `task`'s result. */
  of(task: number): ReadonlyArray<number> {
    return this.list[task] ?? noHolders
  }

  /** How many live slots hold `task`'s result. */
  count(task: number): number {
    return this.list[task]?.length ?? 0
  }

  /** `slot` made `task`'s result, of `bytes`: it is its only holder. */
  made(task: number, slot: number, bytes: number): void {
    this.list[task] = [slot]
    this.bytes[task] = bytes
  }

  /** A copy of `task`'s result now also lives on `slot`. */
  add(task: number, slot: number): void {
    const hs = this.list[task] ??= []
    if (!hs.includes(slot)) hs.push(slot)
  }

  /** Forgets `task`'s holders (released: undefined; lost: an empty list); returns the old ones. */
  clear(task: number, lost: boolean): ReadonlyArray<number> | undefined {
    const hs = this.list[task]
    this.list[task] = lost ? [] : undefined
    return hs
  }

  /** `slot` is gone: it holds nothing any more. */
  dropSlot(slot: number): void {
    for (let i = 0; i < this.list.length; i++) {
      const hs = this.list[i]
      if (hs !== undefined && hs.includes(slot)) this.list[i] = hs.filter((h) => h !== slot)
    }
  }

  /** Whether every input of `i` has a live holder. */
  inputsLive(g: TaskGraph, i: number): boolean {
    for (let j = g.depStart[i]!; j < g.depStart[i + 1]!; j++) if (this.count(g.depList[j]!) === 0) return false
    return true
  }

  /** Whether every finished input of `d` has a live holder (fusing `d` fetches them). */
  finishedInputsLive(s: State.SchedulerState, d: number): boolean {
    const g = s.graph
    for (let k = g.depStart[d]!; k < g.depStart[d + 1]!; k++) {
      const x = g.depList[k]!
      if (s.finished[x] && this.count(x) === 0) return false
    }
    return true
  }

  /** Whether a finished result still needed (not released) has no live holder. */
  anyLost(s: State.SchedulerState): boolean {
    for (let i = 0; i < s.graph.size; i++) if (s.finished[i] && !s.released[i] && this.count(i) === 0) return true
    return false
  }

  /** The finished results still needed (not released) that no live slot holds, but those `skip` flags. */
  lost(s: State.SchedulerState, skip: Uint8Array | null = null): Array<number> {
    const out: Array<number> = []
    for (let i = 0; i < s.graph.size; i++) {
      if (s.finished[i] && !s.released[i] && (skip === null || !skip[i]) && this.count(i) === 0) out.push(i)
    }
    return out
  }

  /**
   * The slot of `free` for ready task `i` (every input held somewhere): the one holding
   * the most bytes of its inputs (+1 an input, so empty results count) whose list in
   * `lists` is below `cap`, ties to `last` then to the smaller list; null when none has room.
   */
  place<S extends { readonly id: number }>(g: TaskGraph, i: number, free: ReadonlyArray<S>, lists: Map<S, Array<number>>, cap: number, last: S | undefined): S | null {
    let best: S | null = null
    let bestBytes = -1
    const sizeOf = (sl: S | null) => (sl === null ? 0 : lists.get(sl)?.length ?? 0)
    for (const sl of free) {
      const b = sizeOf(sl)
      if (b >= cap) continue
      let bytes = 0
      for (let j = g.depStart[i]!; j < g.depStart[i + 1]!; j++) {
        const d = g.depList[j]!
        if (this.list[d]!.includes(sl.id)) bytes += this.bytes[d]! + 1
      }
      if (bytes > bestBytes || (bytes === bestBytes && best !== last && (sl === last || b < sizeOf(best)))) {
        best = sl
        bestBytes = bytes
      }
    }
    return best
  }

  /**
   * What recomputes the lost results `todo`: each with the lost inputs it needs (their
   * union, `closure`), leaving out one whose closure meets a result being recomputed
   * already (`recovering`): it waits for that batch, so no result is recomputed by two
   * batches at once. `taken`: the results of `todo` recomputed.
   */
  recovery(g: TaskGraph, todo: ReadonlyArray<number>, recovering: Uint8Array): { readonly closure: Set<number>; readonly taken: Array<number> } {
    const closure = new Set<number>()
    const taken: Array<number> = []
    for (const t of todo) {
      const mine = new Set<number>()
      const stack = [t]
      let blocked = false
      while (stack.length > 0 && !blocked) {
        const i = stack.pop()!
        if (mine.has(i) || closure.has(i)) continue
        mine.add(i)
        for (let j = g.depStart[i]!; j < g.depStart[i + 1]!; j++) {
          const d = g.depList[j]!
          if (recovering[d]) blocked = true
          else if (this.count(d) === 0) stack.push(d)
        }
      }
      if (blocked) continue
      for (const i of mine) closure.add(i)
      taken.push(t)
    }
    return { closure, taken }
  }
}

/**
 * Results to release, by slot: sent ahead of the slot's next batch, or all at once when
 * a batch came back (nothing may be sent to carry them).
 *
 * @since 0.1.0
 * @internal
 */
export class Releases {
  private readonly pending = new Map<number, Array<number>>()

  queue(slot: number, task: number): void {
    const l = this.pending.get(slot)
    if (l === undefined) this.pending.set(slot, [task])
    else l.push(task)
  }

  /** The releases waiting for `slot`, forgotten. */
  take(slot: number): Array<number> | undefined {
    const l = this.pending.get(slot)
    this.pending.delete(slot)
    return l
  }

  /** Every waiting release of a slot `alive` says is live, into `out`; forgets them all. */
  flush(alive: (slot: number) => boolean, out: Array<Instruction>): void {
    for (const [slot, tasks] of this.pending) if (alive(slot)) out.push({ _tag: "Release", slot, tasks })
    this.pending.clear()
  }
}
