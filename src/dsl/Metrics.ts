/**
 * Clustering metrics over label arrays (pure, in-process).
 *
 * @since 0.1.0
 */

const choose2 = (n: number): number => (n * (n - 1)) / 2

/**
 * The adjusted Rand index of two labelings (Hubert & Arabie): 1 for identical
 * partitions up to renaming, about 0 for independent ones.
 *
 * @since 0.1.0
 * @category analysis
 */
export const adjustedRandIndex = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  if (a.length !== b.length) throw new RangeError(`label arrays differ in length: ${a.length} vs ${b.length}`)
  const n = a.length
  const table = new Map<number, Map<number, number>>()
  const rows = new Map<number, number>()
  const cols = new Map<number, number>()
  for (let i = 0; i < n; i++) {
    const x = a[i]!
    const y = b[i]!
    let r = table.get(x)
    if (r === undefined) table.set(x, (r = new Map()))
    r.set(y, (r.get(y) ?? 0) + 1)
    rows.set(x, (rows.get(x) ?? 0) + 1)
    cols.set(y, (cols.get(y) ?? 0) + 1)
  }
  let index = 0
  for (const r of table.values()) for (const c of r.values()) index += choose2(c)
  let sa = 0
  for (const c of rows.values()) sa += choose2(c)
  let sb = 0
  for (const c of cols.values()) sb += choose2(c)
  const expected = (sa * sb) / choose2(n)
  const max = (sa + sb) / 2
  return max === expected ? 1 : (index - expected) / (max - expected)
}
