/**
 * Counter-based randomness for chunked data: every value is a pure function of
 * (seed, row, draw), so a dataset is the same however it is cut into chunks and in
 * whichever order (or on whichever worker thread) the chunks are made.
 *
 * Leaves out: streams of unbounded length per row (a row draws a handful of numbers).
 *
 * @since 0.1.0
 */

/**
 * A 32-bit avalanche hash (the finaliser of MurmurHash3), used as a keyed PRF.
 *
 * @since 0.1.0
 * @category kernels
 */
export const mix32 = (x: number): number => {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b)
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35)
  return (x ^ (x >>> 16)) >>> 0
}

/**
 * A uniform double in (0, 1) from (seed, row, draw): 52 bits from two hashes.
 *
 * @since 0.1.0
 * @category kernels
 */
export const uniform = (seed: number, row: number, draw: number): number => {
  // Each input goes through a full avalanche in turn (hash-combine), so nearby rows and
  // draws give independent words.
  let h = mix32((seed ^ 0x9e3779b9) >>> 0)
  h = mix32((h ^ (row >>> 0)) >>> 0)
  h = mix32((h + Math.floor(row / 4294967296) + 0x7f4a7c15) >>> 0)
  h = mix32((h ^ Math.imul(draw + 1, 0x632be5ab)) >>> 0)
  const h2 = mix32((h + 0x68bc21eb) >>> 0)
  return ((h >>> 6) * 134217728 + (h2 >>> 5) + 0.5) / 9007199254740992
}

/**
 * A standard normal draw (Box–Muller) from (seed, row, pair); `which` picks the
 * cosine (0) or sine (1) half of the pair.
 *
 * @since 0.1.0
 * @category kernels
 */
export const normal = (seed: number, row: number, pair: number, which: 0 | 1): number => {
  const u1 = uniform(seed, row, 2 * pair)
  const u2 = uniform(seed, row, 2 * pair + 1)
  const r = Math.sqrt(-2 * Math.log(u1))
  return which === 0 ? r * Math.cos(2 * Math.PI * u2) : r * Math.sin(2 * Math.PI * u2)
}

/**
 * A seeded bijection on [0, n): a 4-round Feistel network over the next power of
 * four, cycle-walked back into range. It shuffles row order without materialising a
 * permutation, so each chunk can compute its own rows' positions independently.
 *
 * @since 0.1.0
 * @category kernels
 */
export const permute = (seed: number, n: number, i: number): number => {
  if (n <= 1) return 0
  let bits = 2
  while (2 ** bits < n) bits += 2
  const half = bits / 2
  const mask = 2 ** half - 1
  let x = i
  do {
    let l = Math.floor(x / 2 ** half)
    let r = x % 2 ** half
    for (let round = 0; round < 4; round++) {
      const f = mix32(r ^ mix32(seed + round * 0x9e3779b9)) & mask
      const nl = r
      r = (l ^ f) & mask
      l = nl
    }
    x = l * 2 ** half + r
  } while (x >= n)
  return x
}
