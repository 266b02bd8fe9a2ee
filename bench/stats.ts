/**
 * Statistics shared by the benchmark scripts.
 *
 * @since 0.1.0
 */

/**
 * The median of `xs` (the mean of the two middle values for an even count).
 *
 * @since 0.1.0
 */
export const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}
