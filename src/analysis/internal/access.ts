/**
 * Fast, zero-copy-where-possible access to Arrow columns for the analyses: numeric
 * columns as Float64Array (null -> NaN), string columns as (codes, dictionary) pairs
 * (null -> code -1). Works on any table (several batches, plain Utf8 columns), with a
 * fast path for the single-batch dictionary columns `Load` builds.
 *
 * @since 0.1.0
 */
import { makeData } from "apache-arrow/data"
import { vectorFromArray } from "apache-arrow/factories"
import { Table } from "apache-arrow/table"
import { DataType, Dictionary, Float64, Int32, Utf8 } from "apache-arrow/type"
import { makeVector } from "apache-arrow/vector"
import type { Data, Vector } from "apache-arrow"
import type { Utf8Strings } from "./csvWriter.ts"

/**
 * A string column as integer codes into `dict`; -1 = null.
 *
 * @since 0.1.0
 * @category models
 */
export interface Codes {
  readonly codes: Int32Array
  /** all dictionary strings (materialised on first use: can be large) */
  readonly dict: ReadonlyArray<string>
  /** dictionary size */
  readonly size: number
  /** one dictionary string, without materialising the others */
  readonly at: (code: number) => string
  /** the Arrow dictionary vector when the column had exactly one (for sharing checks) */
  readonly source: unknown
}

const isValid = (d: Data, i: number): boolean =>
  d.nullCount === 0 || d.nullBitmap === undefined || d.nullBitmap.length === 0 ||
  ((d.nullBitmap[(d.offset + i) >> 3] >> ((d.offset + i) & 7)) & 1) === 1

/**
 * Codes over a plain string array.
 *
 * @since 0.1.0
 * @category getters
 */
export const codesFromArray = (codes: Int32Array, dict: ReadonlyArray<string>): Codes => ({
  codes,
  dict,
  size: dict.length,
  at: (c) => dict[c],
  source: undefined
})

/**
 * A dictionary's strings as its own UTF-8 buffers (no copy), when it is one Utf8 batch
 * without nulls; `undefined` otherwise.
 *
 * @since 0.1.0
 * @category getters
 */
export const utf8Strings = (dict: Vector | undefined): Utf8Strings | undefined => {
  const d = dict?.data.length === 1 ? dict.data[0]! : undefined
  if (d === undefined || !DataType.isUtf8(d.type) || d.nullCount !== 0) return undefined
  return { bytes: d.values as Uint8Array, offsets: (d.valueOffsets as Int32Array).subarray(d.offset, d.offset + d.length + 1) }
}

/**
 * Codes of a string column (dictionary or plain).
 *
 * @since 0.1.0
 * @category getters
 */
export const codesOf = (v: Vector | null, n: number): Codes => {
  if (v === null) return codesFromArray(new Int32Array(n).fill(-1), [])
  const datas = v.data
  if (datas.length === 1 && DataType.isDictionary(v.type)) {
    const d = datas[0]
    const dictVec = d.dictionary!
    const raw = d.values as unknown as ArrayLike<number>
    let codes: Int32Array
    // no nulls, Int32 codes (every dictionary Load makes): one copy (a loop with a
    // validity check per row took ~16 ms for a 1M-event load's key, dependency and
    // string columns), none for codes in shared memory (a large load's: Load.ts), which
    // another thread reads too (nobody writes codes)
    if (d.nullCount === 0 && raw instanceof Int32Array) {
      codes = raw.buffer instanceof SharedArrayBuffer ? raw.subarray(0, d.length) : raw.slice(0, d.length)
    }
    else {
      codes = new Int32Array(d.length)
      for (let i = 0; i < d.length; i++) codes[i] = isValid(d, i) ? Number(raw[i]) : -1
    }
    let cache: Array<string> | undefined
    return {
      codes,
      get dict() {
        return (cache ??= dictVec.toArray() as Array<string>)
      },
      size: dictVec.length,
      at: (c) => (cache !== undefined ? cache[c] : (dictVec.get(c) as string)),
      source: dictVec
    }
  }
  const ids = new Map<string, number>()
  const dict: Array<string> = []
  const codes = new Int32Array(v.length)
  let i = 0
  for (const x of v) {
    if (x === null || x === undefined) codes[i++] = -1
    else {
      const s = String(x)
      let c = ids.get(s)
      if (c === undefined) (c = dict.length, dict.push(s), ids.set(s, c))
      codes[i++] = c
    }
  }
  return codesFromArray(codes, dict)
}

/**
 * A numeric column as Float64Array, null -> NaN (a view when possible).
 *
 * @since 0.1.0
 * @category getters
 */
export const floatsOf = (v: Vector | null, n: number): Float64Array => {
  if (v === null) return new Float64Array(n).fill(NaN)
  if (v.data.length === 1 && v.nullCount === 0 && v.data[0].values instanceof Float64Array) {
    const d = v.data[0]
    return (d.values as Float64Array).subarray(d.offset, d.offset + d.length)
  }
  const out = new Float64Array(v.length)
  let i = 0
  for (const x of v) out[i++] = x === null || x === undefined ? NaN : Number(x)
  return out
}

/**
 * Lists of a List<string> column as (offsets, codes into `dict`).
 *
 * @since 0.1.0
 * @category getters
 */
export const listCodesOf = (
  v: Vector | null,
  n: number
): { readonly offsets: Int32Array; readonly codes: Codes } => {
  if (v === null) return { offsets: new Int32Array(n + 1), codes: codesFromArray(new Int32Array(0), []) }
  if (v.data.length === 1) {
    const d = v.data[0]
    const offs = (d.valueOffsets as Int32Array).subarray(d.offset, d.offset + d.length + 1)
    const child = d.children[0]
    const codes = codesOf(makeVector(child) as Vector, child.length)
    const base = offs[0]
    return { offsets: base === 0 ? offs : offs.map((o) => o - base), codes: base === 0 ? codes : { ...codes, codes: codes.codes.subarray(base) } }
  }
  const offsets = new Int32Array(v.length + 1)
  const flat: Array<string | null> = []
  let i = 0
  for (const x of v) {
    if (x !== null && x !== undefined) for (const y of x as Iterable<unknown>) flat.push(y === null ? null : String(y))
    offsets[++i] = flat.length
  }
  return { offsets, codes: codesOf(vectorFromArray(flat, new Utf8()) as Vector, flat.length) }
}

/**
 * Translate codes of `from` into codes of `to` by string (codes absent in `to` -> -1).
 * Identity when both share one dictionary.
 *
 * @since 0.1.0
 * @category getters
 */
export const recode = (from: Codes, to: Codes): Int32Array => {
  if (from.source !== undefined && from.source === to.source) return from.codes
  const index = new Map<string, number>()
  to.dict.forEach((s, i) => index.set(s, i))
  const trans = Int32Array.from(from.dict, (s) => index.get(s) ?? -1)
  return from.codes.map((c) => (c < 0 ? -1 : trans[c]))
}

/**
 * Column specification for `buildTable`.
 *
 * @since 0.1.0
 * @category models
 */
export type Column =
  | { readonly kind: "string"; readonly values: ReadonlyArray<string | null> }
  | { readonly kind: "float"; readonly values: Float64Array | ReadonlyArray<number | null> }
  | { readonly kind: "int"; readonly values: Int32Array | ReadonlyArray<number> }
  | { readonly kind: "codes"; readonly codes: Int32Array; readonly from: Codes }

/**
 * Build a result table: strings dictionary-encoded, floats Float64 (NaN -> null), ints
 * Int32. Column order is the object's key order.
 *
 * @since 0.1.0
 * @category constructors
 */
export const buildTable = (columns: Record<string, Column>): Table => {
  const vectors: Record<string, Vector> = {}
  for (const [name, c] of Object.entries(columns)) {
    if (c.kind === "codes") vectors[name] = codesVector(c.codes, c.from)
    else if (c.kind === "string") vectors[name] = vectorFromArray(c.values as Array<string | null>, dictUtf8())
    else if (c.kind === "int") {
      vectors[name] = makeVector(c.values instanceof Int32Array ? c.values : Int32Array.from(c.values))
    }
    else {
      let xs: Float64Array
      if (c.values instanceof Float64Array) xs = c.values
      else {
        xs = new Float64Array(c.values.length)
        for (let i = 0; i < xs.length; i++) {
          const x = c.values[i]
          xs[i] = x === null ? NaN : x
        }
      }
      let nulls = 0
      const bitmap = new Uint8Array((xs.length + 7) >> 3).fill(0xff)
      for (let i = 0; i < xs.length; i++) {
        if (xs[i] !== xs[i]) (bitmap[i >> 3] &= ~(1 << (i & 7)), nulls++)
      }
      vectors[name] = makeVector(
        makeData({ type: new Float64(), length: xs.length, nullCount: nulls, nullBitmap: nulls > 0 ? bitmap : null, data: xs })
      )
    }
  }
  return new Table(vectors)
}

const dictUtf8 = () => new Dictionary(new Utf8(), new Int32())

/** A dictionary column of `codes` (-1 = null) reusing `from`'s dictionary vector when it has one. */
const codesVector = (codes: Int32Array, from: Codes): Vector => {
  const dictionary = (from.source as Vector | undefined) ?? vectorFromArray(from.dict as Array<string>, new Utf8())
  let nulls = 0
  const bitmap = new Uint8Array((codes.length + 7) >> 3).fill(0xff)
  const data = new Int32Array(codes.length)
  for (let i = 0; i < codes.length; i++) {
    if (codes[i] < 0) (bitmap[i >> 3] &= ~(1 << (i & 7)), nulls++)
    else data[i] = codes[i]
  }
  return makeVector(
    makeData({ type: dictUtf8(), length: codes.length, nullCount: nulls, nullBitmap: nulls > 0 ? bitmap : null, data, dictionary })
  )
}

/**
 * Is this value null (or NaN).
 *
 * @since 0.1.0
 * @category getters
 */
export const isNothing = (x: number): boolean => x !== x
