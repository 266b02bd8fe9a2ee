/**
 * CSV rows as bytes from plain column data (no Arrow: a worker thread formats part of a
 * large table with it, `Analyze.ts`): numbers in JS's shortest round-trip form (NaN
 * empty), dictionary strings copied from their own UTF-8 and quoted per RFC 4180 where
 * they must be, other cells as given. `Format.csvBlocks` turns an Arrow table into these
 * columns; both ways give the same bytes.
 *
 * Hot path: plain loops over typed arrays, on purpose.
 *
 * @since 0.1.0
 * @internal
 */

/**
 * One column's cells: numbers (NaN: empty), dictionary codes into UTF-8 entries (-1:
 * empty; an entry is quoted if it needs it), or finished cell texts.
 *
 * @since 0.1.0
 * @internal
 */
export type CsvColumn =
  | { readonly kind: "numbers"; readonly values: NumberArray }
  | { readonly kind: "dictionary"; readonly codes: Int32Array; readonly bytes: Uint8Array; readonly offsets: ArrayLike<number> }
  | { readonly kind: "text"; readonly cells: ReadonlyArray<string> }

/**
 * A numeric column's values: a typed array of its own type (an Arrow column's values).
 *
 * @since 0.1.0
 * @internal
 */
export type NumberArray = Float64Array | Float32Array | Int32Array | Uint32Array | Int16Array | Uint16Array | Int8Array | Uint8Array

const longestNumber = 32 // "-1.2345678901234567e-308" and the like
const [QUOTE, COMMA, LF, CR] = [0x22, 0x2c, 0x0a, 0x0d]
const [NUMBERS, DICTIONARY, TEXT] = [0, 1, 2]

/** A dictionary column ready to copy from: its entries' bytes, and which need quotes. */
interface Entries {
  readonly codes: Int32Array
  readonly src: Uint8Array
  readonly offsets: ArrayLike<number>
  /** per entry: 1 when it must be quoted */
  readonly quoted: Uint8Array
}

const entriesOf = (c: Extract<CsvColumn, { kind: "dictionary" }>): Entries => ({
  codes: c.codes,
  src: c.bytes,
  offsets: c.offsets,
  quoted: quotedEntries(c.bytes, c.offsets)
})

/**
 * Which dictionary entries must be quoted (they hold `"`, `,`, CR or LF): one pass over
 * the entries in their order (a task table's rows visit its keys in random order: judging
 * each entry when first met was a cache miss per key).
 */
const quotedEntries = (bytes: Uint8Array, offsets: ArrayLike<number>): Uint8Array => {
  const n = offsets.length - 1
  const out = new Uint8Array(Math.max(0, n))
  for (let e = 0; e < n; e++) {
    for (let k = offsets[e]!, end = offsets[e + 1]!; k < end; k++) {
      const x = bytes[k]!
      if (x === QUOTE || x === COMMA || x === LF || x === CR) {
        out[e] = 1
        break
      }
    }
  }
  return out
}

/**
 * The most bytes one row takes: numbers and dictionary entries at their widest (quoting
 * at most doubles an entry, plus the two quotes around), a separator after each cell;
 * text cells are measured row by row.
 */
const rowBound = (columns: ReadonlyArray<CsvColumn>): number => {
  let n = 1
  for (const c of columns) {
    if (c.kind === "numbers") n += longestNumber + 1
    else if (c.kind === "dictionary") {
      let widest = 0
      for (let j = 0; j + 1 < c.offsets.length; j++) widest = Math.max(widest, c.offsets[j + 1]! - c.offsets[j]!)
      n += 2 * widest + 3
    } else n += 1
  }
  return n
}

/**
 * Rows `from` to `to` of these columns as CSV bytes (no header), a block of about
 * `blockBytes` at a time. One loop over rows and columns with the column's kind
 * switched on inline (a closure per column made the cell writes a call each through a
 * megamorphic site); dictionary entries copied byte by byte, numbers as `String(x)`'s
 * characters.
 *
 * @since 0.1.0
 * @internal
 */
export const csvRowBlocks = function*(columns: ReadonlyArray<CsvColumn>, from: number, to: number, blockBytes = 1 << 20): Generator<Uint8Array> {
  const n = columns.length
  const kinds = Int8Array.from(columns, (c) => (c.kind === "numbers" ? NUMBERS : c.kind === "dictionary" ? DICTIONARY : TEXT))
  const numbers = columns.map((c) => (c.kind === "numbers" ? c.values : new Float64Array(0)))
  const entries = columns.map((c) => (c.kind === "dictionary" ? entriesOf(c) : undefined))
  const texts = columns.map((c) => (c.kind === "text" ? c.cells : []))
  const hasText = columns.some((c) => c.kind === "text")
  const bound = rowBound(columns)
  let buf = Buffer.allocUnsafe(Math.max(blockBytes, bound))
  let pos = 0
  for (let i = from; i < to; i++) {
    let need = bound
    if (hasText) for (let c = 0; c < n; c++) if (kinds[c] === TEXT) need += texts[c]![i]!.length * 3
    if (pos + need > buf.length) {
      if (pos > 0) yield buf.subarray(0, pos)
      buf = Buffer.allocUnsafe(Math.max(blockBytes, need))
      pos = 0
    }
    for (let c = 0; c < n; c++) {
      if (c > 0) buf[pos++] = COMMA
      const kind = kinds[c]
      if (kind === NUMBERS) {
        const x = numbers[c]![i]!
        if (x !== x) continue // NaN: empty
        const s = String(x)
        for (let k = 0; k < s.length; k++) buf[pos++] = s.charCodeAt(k)
      } else if (kind === DICTIONARY) {
        const e = entries[c]!
        const code = e.codes[i]!
        if (code < 0) continue
        const f = e.offsets[code]!
        const t = e.offsets[code + 1]!
        const src = e.src
        // byte by byte: Buffer.copy of a range makes a Uint8Array per call (~0.4 µs a key,
        // seen in the CLI's profile), far more than a 50-byte key takes to copy
        if (e.quoted[code] === 0) for (let k = f; k < t; k++) buf[pos++] = src[k]!
        else {
          buf[pos++] = QUOTE
          for (let k = f; k < t; k++) {
            const b = src[k]!
            buf[pos++] = b
            if (b === QUOTE) buf[pos++] = QUOTE
          }
          buf[pos++] = QUOTE
        }
      } else pos += buf.write(texts[c]![i]!, pos, "utf8")
    }
    buf[pos++] = LF
  }
  if (pos > 0) yield buf.subarray(0, pos)
}

/**
 * Rows `from` to `to` of these columns, as columns of their own (row `from` becomes 0):
 * what a worker thread needs to format them (a dictionary's entries stay whole).
 *
 * @since 0.1.0
 * @internal
 */
export const sliceColumns = (columns: ReadonlyArray<CsvColumn>, from: number, to: number): Array<CsvColumn> =>
  columns.map((c) =>
    c.kind === "numbers"
      ? { kind: "numbers", values: c.values.slice(from, to) }
      : c.kind === "dictionary"
      ? { ...c, codes: c.codes.slice(from, to) }
      : { kind: "text", cells: c.cells.slice(from, to) }
  )

/**
 * A worker thread that formats CSV rows (`csvWorker.ts`), one request at a time (requests
 * made meanwhile wait their turn); a failed or crashed worker rejects, and the caller
 * formats the rows itself.
 *
 * @since 0.1.0
 * @internal
 */
export interface CsvHelper {
  readonly format: (columns: ReadonlyArray<CsvColumn>, rows: number) => Promise<ReadonlyArray<Uint8Array>>
  readonly close: () => void
}

// `.ts` when run from the sources, `.js` from the compiled package (dist/).
const workerUrl = new URL(`./csvWorker${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`, import.meta.url)

/**
 * Start a CSV worker thread.
 *
 * @since 0.1.0
 * @internal
 */
export const csvHelper = async (): Promise<CsvHelper> => {
  const { Worker } = await import("node:worker_threads")
  const worker = new Worker(workerUrl)
  let failed: unknown
  worker.on("error", (e) => (failed = e))
  // one request at a time: each waits for the one before (a reply names no request)
  let last: Promise<unknown> = Promise.resolve()
  const send = (columns: ReadonlyArray<CsvColumn>, rows: number) =>
    new Promise<ReadonlyArray<Uint8Array>>((resolve, reject) => {
      if (failed !== undefined) return reject(failed)
      const done = () => (worker.off("message", onMessage), worker.off("error", onError), worker.off("exit", onExit))
      const onMessage = (m: { readonly blocks?: ReadonlyArray<Uint8Array>; readonly error?: string }) => {
        done()
        if (m.blocks !== undefined) resolve(m.blocks)
        else reject(new Error(m.error))
      }
      const onError = (e: unknown) => (done(), reject(e))
      const onExit = (code: number) => (done(), reject(new Error(`CSV worker exited with code ${code}`)))
      worker.on("message", onMessage)
      worker.on("error", onError)
      worker.on("exit", onExit)
      worker.postMessage({ columns, rows })
    })
  return {
    format: (columns, rows) => {
      const reply = last.then(() => send(columns, rows))
      last = reply.catch(() => undefined)
      return reply
    },
    close: () => void worker.terminate()
  }
}
