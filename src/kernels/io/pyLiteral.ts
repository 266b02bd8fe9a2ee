/**
 * A parser for the subset of Python literals a `.npy` header is written in (NumPy writes
 * it with `repr` and reads it with `ast.literal_eval`): dicts, tuples, lists, strings,
 * integers, `True`, `False` and `None`. Replaces the regexes the header used to be read
 * with, which a `'shape': (5, 2)` inside another string could mislead.
 *
 * Bounded: one pass over the text, nesting at most {@link MAX_DEPTH} deep, integers
 * beyond 2^53 rejected. Every failure is a {@link LiteralError} carrying the character
 * position where the text stopped making sense.
 *
 * Leaves out: floats, complex numbers, sets, bytes literals, string concatenation,
 * expressions (NumPy never writes them in a header).
 *
 * @since 0.1.0
 * @internal
 */

/**
 * A parsed literal. Tuples and lists are tagged so a shape `(2, 3)` and a structured
 * dtype's `[('x', '<f8')]` stay apart.
 *
 * @since 0.1.0
 * @internal
 */
export type Literal = (
  | { readonly _tag: "dict"; readonly entries: ReadonlyArray<readonly [Literal, Literal]> }
  | { readonly _tag: "tuple"; readonly items: ReadonlyArray<Literal> }
  | { readonly _tag: "list"; readonly items: ReadonlyArray<Literal> }
  | { readonly _tag: "str"; readonly value: string }
  | { readonly _tag: "int"; readonly value: number }
  | { readonly _tag: "bool"; readonly value: boolean }
  | { readonly _tag: "none" }
) & {
  /** character position where the literal starts */
  readonly at: number
}

/**
 * Where and why the text is not a literal of the subset.
 *
 * @since 0.1.0
 * @internal
 */
export class LiteralError extends Error {
  readonly position: number
  readonly problem: string
  constructor(position: number, problem: string) {
    super(`${problem} at character ${position}`)
    this.position = position
    this.problem = problem
  }
}

/** Deepest nesting accepted (a header is one dict holding a tuple). */
export const MAX_DEPTH = 16

const ESCAPES: Record<string, string> = { "\\": "\\", "'": "'", "\"": "\"", n: "\n", r: "\r", t: "\t", "0": "\0" }

/**
 * Parses `text` as one literal followed only by whitespace.
 *
 * @since 0.1.0
 * @internal
 */
export const parse = (text: string): Literal => {
  let i = 0
  const space = () => {
    while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i++
  }
  const err = (problem: string): LiteralError => new LiteralError(i, problem)
  const shown = () => (i < text.length ? JSON.stringify(text[i]) : "the end of the text")

  const value = (depth: number): Literal => {
    if (depth > MAX_DEPTH) throw err(`nesting deeper than ${MAX_DEPTH}`)
    space()
    const at = i
    const c = text[i]
    if (c === "{") return dict(depth, at)
    if (c === "(") return sequence(depth, ")", "tuple", at)
    if (c === "[") return sequence(depth, "]", "list", at)
    if (c === "'" || c === "\"") return str(c, at)
    if (c !== undefined && (c === "-" || c === "+" || (c >= "0" && c <= "9"))) return int(at)
    for (const [word, lit] of [["True", { _tag: "bool", value: true, at }], ["False", { _tag: "bool", value: false, at }], ["None", { _tag: "none", at }]] as const) {
      if (text.startsWith(word, i) && !/[A-Za-z0-9_]/.test(text[i + word.length] ?? "")) {
        i += word.length
        return lit
      }
    }
    throw err(`expected a value, found ${shown()}`)
  }

  const dict = (depth: number, at: number): Literal => {
    i++ // {
    const entries: Array<readonly [Literal, Literal]> = []
    for (;;) {
      space()
      if (text[i] === "}") break
      const k = value(depth + 1)
      space()
      if (text[i] !== ":") throw err(`expected ':' after a dict key, found ${shown()}`)
      i++
      entries.push([k, value(depth + 1)])
      space()
      if (text[i] === ",") i++
      else if (text[i] !== "}") throw err(`expected ',' or '}' in a dict, found ${shown()}`)
    }
    i++
    return { _tag: "dict", entries, at }
  }

  const sequence = (depth: number, close: ")" | "]", tag: "tuple" | "list", at: number): Literal => {
    i++ // ( or [
    const items: Array<Literal> = []
    let comma = false
    for (;;) {
      space()
      if (text[i] === close) break
      items.push(value(depth + 1))
      space()
      if (text[i] === ",") {
        comma = true
        i++
      } else if (text[i] !== close) throw err(`expected ',' or '${close}', found ${shown()}`)
    }
    i++
    // `(5)` is a parenthesised 5 in Python, not a tuple; `()` and `(5,)` are tuples
    if (tag === "tuple" && items.length === 1 && !comma) return items[0]!
    return tag === "tuple" ? { _tag: "tuple", items, at } : { _tag: "list", items, at }
  }

  const str = (quote: string, at: number): Literal => {
    i++
    let out = ""
    for (;;) {
      const c = text[i]
      if (c === undefined || c === "\n") throw err("unterminated string")
      if (c === quote) break
      if (c === "\\") {
        const e = text[i + 1]
        if (e === undefined) throw err("unterminated string")
        out += ESCAPES[e!] ?? `\\${e}` // Python keeps the backslash of an unknown escape
        i += 2
        continue
      }
      out += c
      i++
    }
    i++
    return { _tag: "str", value: out, at }
  }

  const int = (at: number): Literal => {
    const start = i
    if (text[i] === "-" || text[i] === "+") i++
    const digits = i
    while (i < text.length && text[i]! >= "0" && text[i]! <= "9") i++
    if (i === digits) throw err("expected digits")
    const v = Number(text.slice(start, i))
    if (text[i] === "L") i++ // Python 2's long suffix, in headers written by NumPy on Python 2
    if (text[i] === "." || text[i] === "e" || text[i] === "E" || text[i] === "j") throw err("only integers are accepted here")
    if (!Number.isSafeInteger(v)) {
      i = start
      throw err(`integer ${text.slice(start, digits + 20)} is beyond 2^53`)
    }
    return { _tag: "int", value: v, at }
  }

  const out = value(0)
  space()
  if (i < text.length) throw err(`unexpected ${shown()} after the literal`)
  return out
}
