/**
 * The one rule that names a task's function (its group) from its key: dask's
 * `key_split` (dask/utils.py). The profiler writes it into a `Compute` event's
 * `args.name` when the task has no name of its own, and the analysis loader derives it
 * for events without `args.name` (DASF's, or old files), so a key gets the same
 * function name whoever derives it.
 *
 * The rule, as dask's: split the key on `-`; keep the first word (stripped of
 * `_'()"` and cut at a `,` when it does not start with a letter), then each following
 * word while it is purely alphabetic and not an 8-letter word starting with `a`-`f`
 * (dask's test for a hex token; it also drops words such as `feedback`). A result of 32
 * hex digits is `data`; one starting with `<` (an object repr) is its class name; an
 * empty key, or one that leaves nothing, is `Other`.
 *
 * Where it differs from dask: a stringified tuple key `('x-1', 0)` (how DASF writes
 * dask's tuple keys) is split as dask splits the tuple itself, by its first element, so
 * `('hello-world', 0)` is `hello-world` (dask's string path would give `hello`).
 *
 * Where it differs from the rules it replaces: the engine's `keyName` skipped number
 * and hex words and went on (`a-1-b` was `a-b`, now `a`), kept 8-letter hex words
 * (`x-abcdefab`, now `x`) and 32-hex keys (now `data`); the analysis' `functionName`
 * kept 8-letter words of letters other than `a`-`f` after the first (`x-database`, now
 * `x`); the report's `functionOfKey` kept words with digits (`f-v2-1` was `f-v2`, now
 * `f`).
 *
 * Hot enough to matter: the trace writer calls it once per unnamed task, so it scans
 * characters instead of using regular expressions (except for tuple keys).
 *
 * @since 0.1.0
 */

const isAsciiLetter = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 97 && c <= 122)
const letter = /^\p{L}$/u

/** Python's `str.isalpha` on `s[from..to)`: non-empty and every character a letter. */
const isAlpha = (s: string, from: number, to: number): boolean => {
  if (to <= from) return false
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i)
    if (isAsciiLetter(c)) continue
    if (c < 128) return false
    // non-ASCII: a letter by Unicode (a surrogate pair is one code point)
    const cp = s.codePointAt(i)!
    if (!letter.test(String.fromCodePoint(cp))) return false
    if (cp > 0xffff) i++
  }
  return true
}

const isHex32 = (s: string): boolean => {
  if (s.length !== 32) return false
  for (let i = 0; i < 32; i++) {
    const c = s.charCodeAt(i)
    if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return false
  }
  return true
}

const strip = (s: string, chars: string): string => {
  let a = 0
  let b = s.length
  while (a < b && chars.includes(s[a]!)) a++
  while (b > a && chars.includes(s[b - 1]!)) b--
  return s.slice(a, b)
}

const tupleKey = /^\(\s*(['"])(.*?)\1/

/**
 * The function (group) name of a task key, by dask's `key_split` rule (see the module
 * comment for the rule and where it differs).
 *
 * **Example** (Naming functions from keys)
 *
 * ```ts
 * import { keySplit } from "tessera/trace/KeySplit"
 *
 * keySplit("add-3f2a9c1d7b") // "add"
 * keySplit("read-csv-12") // "read-csv"
 * keySplit("('sum-c79b99cd0615d60ce01b37f961c46f12', 3, 0)") // "sum"
 * keySplit("c79b99cd0615d60ce01b37f961c46f12") // "data"
 * ```
 *
 * @since 0.1.0
 * @category getters
 */
export const keySplit = (key: string): string => {
  let s = key
  if (s.charCodeAt(0) === 40 /* ( */) {
    const m = tupleKey.exec(s)
    if (m !== null) s = m[2]!
  }
  let end = s.indexOf("-")
  if (end < 0) end = s.length
  if (end === 0) return "Other" // dask: words[0][0] raises on an empty first word
  let result: string
  if (isAlpha(s, 0, 1)) result = s.slice(0, end)
  else {
    const first = s.slice(0, end)
    const comma = first.indexOf(",")
    result = strip(comma < 0 ? first : first.slice(0, comma), "_'()\"")
  }
  while (end < s.length) {
    const from = end + 1
    let to = s.indexOf("-", from)
    if (to < 0) to = s.length
    if (!isAlpha(s, from, to)) break
    const c = s.charCodeAt(from)
    if (to - from === 8 && c >= 97 && c <= 102) break // dask: an 8-letter hex-looking token
    result += s.slice(end, to)
    end = to
  }
  if (result.length === 0) return "Other"
  if (isHex32(result)) return "data"
  if (result.charCodeAt(0) === 60 /* < */) {
    const words = strip(result, "<>").split(/\s+/).filter((w) => w.length > 0)
    if (words.length === 0) return "Other"
    result = words[0]!.split(".").pop()!
  }
  return result
}
