/**
 * Grouping and ordering helpers of the analyses that need no Arrow (`taskView.ts`
 * re-exports them): a worker thread that computes an analysis's rows loads these alone.
 *
 * @since 0.1.0
 */

/**
 * DASF's "GPU" column: the last `-`-separated part of the worker (thread) id, which
 * is the dask worker name (DASF-NOTES 11); "" for a missing worker.
 *
 * @since 0.1.0
 * @category getters
 */
export const gpuLabel = (worker: string | undefined): string =>
  worker === undefined ? "" : worker.slice(worker.lastIndexOf("-") + 1)

/**
 * Compare strings with nulls first; for deterministic row order.
 *
 * @since 0.1.0
 * @category getters
 */
export const cmpStr = (a: string | null, b: string | null): number =>
  a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1

/**
 * Group rows by a tuple of small codes; returns group id per row and the first row of
 * each group.
 *
 * @since 0.1.0
 * @category getters
 */
export const groupBy = (
  n: number,
  parts: ReadonlyArray<{ readonly codes: Int32Array; readonly size: number }>
): { readonly group: Int32Array; readonly firstRow: Array<number> } => {
  const group = new Int32Array(n)
  const firstRow: Array<number> = []
  // composite code; a dense table when the code space is small enough, else a Map
  let space = 1
  for (const p of parts) space *= p.size + 1
  if (space <= 1 << 22) {
    const dense = new Int32Array(space).fill(-1)
    for (let i = 0; i < n; i++) {
      let k = 0
      for (const p of parts) k = k * (p.size + 1) + (p.codes[i] + 1)
      let g = dense[k]
      if (g < 0) {
        g = dense[k] = firstRow.length
        firstRow.push(i)
      }
      group[i] = g
    }
    return { group, firstRow }
  }
  // large spaces (the last part is the big one, e.g. task keys): per last-part code,
  // remember the first group and its prefix; a Map only for codes seen with other prefixes
  const last = parts[parts.length - 1]
  const prefixes = parts.slice(0, -1)
  const firstGroup = new Int32Array(last.size + 1).fill(-1)
  const firstPrefix = new Float64Array(last.size + 1)
  const ids = new Map<number, number>()
  for (let i = 0; i < n; i++) {
    let pre = 0
    for (const p of prefixes) pre = pre * (p.size + 1) + (p.codes[i] + 1)
    const c = last.codes[i] + 1
    let g = firstGroup[c]
    if (g < 0) {
      g = firstGroup[c] = firstRow.length
      firstPrefix[c] = pre
      firstRow.push(i)
    } else if (firstPrefix[c] !== pre) {
      const k = pre * (last.size + 1) + c
      const m = ids.get(k)
      if (m === undefined) {
        g = firstRow.length
        ids.set(k, g)
        firstRow.push(i)
      } else g = m
    }
    group[i] = g
  }
  return { group, firstRow }
}

/**
 * `part` as a percentage of `whole`, NaN when `whole` is not positive.
 *
 * @since 0.1.0
 * @category getters
 */
export const pct = (part: number, whole: number): number => (whole > 0 ? (part / whole) * 100 : NaN)

/**
 * Each worker's total task time, summed in row order: the total of row `r`'s (host,
 * worker) pair. A slot per code pair (-1 codes included) where there are few enough,
 * else the pairs grouped.
 *
 * @since 0.1.0
 * @category getters
 */
export const workerTotals = (
  rows: { readonly n: number; readonly host: Int32Array; readonly worker: Int32Array; readonly duration: Float64Array },
  hosts: number,
  workers: number
): (r: number) => number => {
  const W1 = workers + 1
  const dense = (hosts + 1) * W1 <= 1 << 22
  const group = dense ? undefined : groupBy(rows.n, [{ codes: rows.host, size: hosts }, { codes: rows.worker, size: workers }]).group
  const slot = (r: number) => (group === undefined ? (rows.host[r] + 1) * W1 + rows.worker[r] + 1 : group[r])
  const total = new Float64Array(dense ? (hosts + 1) * W1 : rows.n)
  for (let i = 0; i < rows.n; i++) total[slot(i)] += rows.duration[i]
  return (r) => total[slot(r)]
}
