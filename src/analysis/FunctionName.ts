/**
 * Function (task group) names from task keys, as dask's `key_split` derives them, for
 * every key shape: `('x-<token>', 0, 1)` stringified tuples, `finalize-<token>`,
 * `original-array-<token>`, keys without `-`. DASF's own derivation
 * (`"-".join(key.split(",")[0][2:-1].split("-")[:-1])`) only works for tuple keys
 * (DASF-NOTES 8); this one does not cut letters off.
 *
 * @since 0.1.0
 */

const hex8 = /^[a-f0-9]{8}$/
const hex32 = /^[a-f0-9]{32}$/
const alpha = /^[A-Za-z]+$/

/**
 * The function name of a task key: the leading words of the key (of its first tuple
 * element for a tuple key) up to the first word that is a token (not purely
 * alphabetic, or 8 hex digits). A bare 32-hex-digit key is `data`, as in dask.
 *
 * @since 0.1.0
 * @category analysis
 */
export const functionName = (key: string): string => {
  let s = key.trim()
  if (s.startsWith("(")) {
    // stringified tuple: ('name-token', 0, 1) or ("name-token", 0)
    const m = /^\(\s*(['"])(.*?)\1/.exec(s)
    s = m !== null ? m[2] : s.slice(1).split(",")[0].trim()
  }
  const words = s.split("-")
  let result = words[0]
  if (result.length > 0 && !/^[A-Za-z]/.test(result)) result = result.split(",")[0].replace(/^[_'()"]+|[_'()"]+$/g, "")
  for (let i = 1; i < words.length; i++) {
    const w = words[i]
    if (alpha.test(w) && !hex8.test(w)) result += "-" + w
    else break
  }
  if (hex32.test(result)) return "data"
  return result
}

/**
 * DASF's own derivation, kept to show (and test) how it differs.
 *
 * @since 0.1.0
 * @category analysis
 */
export const dasfFunctionName = (key: string): string =>
  key.split(",")[0].slice(2, -1).split("-").slice(0, -1).join("-")
