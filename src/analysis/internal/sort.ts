/**
 * Argsort of Float64 values by LSD radix sort over their bit patterns (O(n), stable),
 * for the large result tables (hundreds of thousands of rows) where a comparator sort
 * costs more than the whole analysis. Hot path; plain imperative code on purpose.
 *
 * @since 0.1.0
 */

/**
 * Row order sorting `values` descending (NaN last), then runs of equal values by
 * `tie(a, b)` (a comparator over row indices).
 *
 * @since 0.1.0
 * @category analysis
 */
export const argsortDesc = (values: Float64Array, tie: (a: number, b: number) => number): Int32Array => {
  const n = values.length
  // sortable unsigned keys: flip all bits of negatives, the sign bit of positives;
  // then invert so that ascending key order = descending value order
  const bits = new Uint32Array(new Float64Array(values).buffer)
  const hi = new Uint32Array(n)
  const lo = new Uint32Array(n)
  for (let i = 0; i < n; i++) {
    let h = bits[2 * i + 1]
    let l = bits[2 * i]
    if (values[i] !== values[i]) (h = 0xffffffff, l = 0xffffffff) // NaN last
    else {
      if (h & 0x80000000) (h = ~h >>> 0, l = ~l >>> 0)
      else h = (h | 0x80000000) >>> 0
      h = ~h >>> 0
      l = ~l >>> 0
    }
    hi[i] = h
    lo[i] = l
  }
  let order = new Int32Array(n)
  for (let i = 0; i < n; i++) order[i] = i
  let tmp = new Int32Array(n)
  const count = new Int32Array(65536)
  for (let pass = 0; pass < 4; pass++) {
    const src = pass < 2 ? lo : hi
    const shift = pass % 2 === 0 ? 0 : 16
    count.fill(0)
    for (let i = 0; i < n; i++) count[(src[order[i]] >>> shift) & 0xffff]++
    let sum = 0
    for (let d = 0; d < 65536; d++) {
      const c = count[d]
      count[d] = sum
      sum += c
    }
    for (let i = 0; i < n; i++) {
      const r = order[i]
      tmp[count[(src[r] >>> shift) & 0xffff]++] = r
    }
    const t = order
    order = tmp
    tmp = t
  }
  // runs of equal values: order by the tie-breaker
  let i = 0
  while (i < n) {
    let j = i + 1
    while (j < n && hi[order[j]] === hi[order[i]] && lo[order[j]] === lo[order[i]]) j++
    if (j - i > 1) order.subarray(i, j).sort(tie)
    i = j
  }
  return order
}
