/**
 * The differential flame graph's data (issue 36): two call trees of stack samples
 * (Profile.ts `flameTree`, first level the tasks' functions) merged by path, each box
 * with its share of its side's sampled time, so that a box whose share grew from OLD to
 * NEW is where time moved to. Shares, not seconds: two runs of different lengths (or
 * numbers of runs) compare as they are.
 *
 * @since 0.1.0
 */
import { flameTree, type ProfileData } from "./Profile.ts"

/**
 * One box of the merged tree: its shares (0..1) of all sampled time on each side, and of
 * the time where it is the innermost frame (`self`).
 *
 * @since 0.1.0
 * @category models
 */
export interface FlameDiffNode {
  readonly name: string
  readonly location: string
  oldShare: number
  newShare: number
  oldSelf: number
  newSelf: number
  readonly children: Array<FlameDiffNode>
}

/**
 * Merges the call trees of OLD's and NEW's samples (every run's samples of a side
 * together).
 *
 * @since 0.1.0
 * @category analysis
 */
export const flameDiff = (old: ProfileData, neu: ProfileData): FlameDiffNode => {
  const root: FlameDiffNode = { name: "all", location: "", oldShare: 0, newShare: 0, oldSelf: 0, newSelf: 0, children: [] }
  const index = new Map<FlameDiffNode, Map<string, FlameDiffNode>>()
  const add = (side: "old" | "new", d: ProfileData) => {
    const tree = flameTree(d)
    const total = tree.value
    if (!(total > 0)) return
    const walk = (src: typeof tree, dst: FlameDiffNode) => {
      if (side === "old") (dst.oldShare += src.value / total, dst.oldSelf += src.self / total)
      else (dst.newShare += src.value / total, dst.newSelf += src.self / total)
      for (const c of src.children) {
        let m = index.get(dst)
        if (m === undefined) index.set(dst, m = new Map())
        const k = `${c.name}\u0000${c.location}`
        let box = m.get(k)
        if (box === undefined) {
          box = { name: c.name, location: c.location, oldShare: 0, newShare: 0, oldSelf: 0, newSelf: 0, children: [] }
          m.set(k, box)
          dst.children.push(box)
        }
        walk(c, box)
      }
    }
    walk(tree, root)
  }
  add("old", old)
  add("new", neu)
  const sort = (n: FlameDiffNode): void => {
    n.children.sort((a, b) => Math.max(b.newShare, b.oldShare) - Math.max(a.newShare, a.oldShare))
    for (const c of n.children) sort(c)
  }
  sort(root)
  return root
}

/**
 * The frames whose self share changed most (summed over every place they appear), with
 * their shares on each side: "where samples moved", as pprof's `-diff_base` top.
 *
 * @since 0.1.0
 * @category analysis
 */
export const topSelfChanges = (
  root: FlameDiffNode,
  n = 10
): Array<{ readonly name: string; readonly location: string; readonly oldSelf: number; readonly newSelf: number }> => {
  const by = new Map<string, { name: string; location: string; oldSelf: number; newSelf: number }>()
  const walk = (x: FlameDiffNode, depth: number) => {
    // the first level is the tasks' functions (their boxes hold no frame of their own)
    if (depth >= 2) {
      const k = `${x.name}\u0000${x.location}`
      const e = by.get(k) ?? { name: x.name, location: x.location, oldSelf: 0, newSelf: 0 }
      e.oldSelf += x.oldSelf
      e.newSelf += x.newSelf
      by.set(k, e)
    }
    for (const c of x.children) walk(c, depth + 1)
  }
  walk(root, 0)
  return [...by.values()].sort((a, b) => Math.abs(b.newSelf - b.oldSelf) - Math.abs(a.newSelf - a.oldSelf)).slice(0, n)
}
