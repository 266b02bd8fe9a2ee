/**
 * Columns: read the columns of the tables `Load` builds as flat arrays — numeric columns
 * as Float64Array (null -> NaN), string columns as codes into a dictionary (null -> -1).
 * The public face of the analyses' own column access (`internal/access.ts`), for views
 * outside the analysis layer (the report's model, `report/FromTables.ts`).
 *
 * @since 0.1.0
 */
import type { Vector } from "apache-arrow"
import * as access from "./internal/access.ts"

/**
 * A string column as integer codes into `dict`; -1 = null.
 *
 * @since 0.1.0
 * @category models
 */
export type Codes = access.Codes

/**
 * The first `n` values of a string column as codes; a null or absent column is all -1.
 * Zero-copy for the single-batch dictionary columns `Load` builds.
 *
 * @since 0.1.0
 * @category getters
 */
export const codesOf: (v: Vector | null, n: number) => Codes = access.codesOf

/**
 * The first `n` values of a numeric column as float64 (a view when possible); nulls and
 * an absent column are NaN.
 *
 * @since 0.1.0
 * @category getters
 */
export const floatsOf: (v: Vector | null, n: number) => Float64Array = access.floatsOf

/**
 * The first `n` lists of a List<string> column (the tasks' `dependencies`) as offsets
 * into one array of codes: list `i` is `codes.codes[offsets[i] .. offsets[i + 1])`. For
 * `Load`'s tables the codes share the `key` column's dictionary.
 *
 * @since 0.1.0
 * @category getters
 */
export const listCodesOf: (v: Vector | null, n: number) => { readonly offsets: Int32Array; readonly codes: Codes } =
  access.listCodesOf

/**
 * Codes of `from` as codes of `to`'s dictionary, by string (-1 where `to` lacks the
 * string, and for nulls): `from`'s own codes when both share one dictionary, as `Load`'s
 * key and dependency columns do (no string is made then).
 *
 * @since 0.1.0
 * @category getters
 */
export const recode: (from: Codes, to: Codes) => Int32Array = access.recode
