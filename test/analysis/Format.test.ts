import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { Dictionary, Float64, Int32, Table, tableFromArrays, Utf8, vectorFromArray } from "apache-arrow"
import fc from "fast-check"
import { csvBlocks, csvColumns, csvHeader, maxCellWidth, toCsv, toText } from "../../src/analysis/Format.ts"
import { csvHelper, csvRowBlocks, sliceColumns } from "../../src/analysis/internal/csvWriter.ts"

/** RFC 4180 by the letter, one cell at a time: the reference the fast writer is checked against. */
const naiveCsv = (rows: ReadonlyArray<ReadonlyArray<string | number | null>>, names: ReadonlyArray<string>): string => {
  const cell = (x: string | number | null) => {
    if (x === null || (typeof x === "number" && Number.isNaN(x))) return ""
    const s = String(x)
    return /[",\n\r]/.test(s) ? `"${s.replaceAll("\"", "\"\"")}"` : s
  }
  return [names, ...rows].map((r) => r.map(cell).join(",")).join("\n") + "\n"
}

const column = (text: string, name: string): Array<string> => {
  const lines = text.split("\n")
  const header = lines[0]!
  const end = header.indexOf(name) + name.length
  return lines.slice(1).map((l) => l.slice(0, end).trim().split(/\s{2,}/).at(-1)!)
}

describe("Format", () => {
  it("prints floats for people: 4 significant digits at the column's largest value, whole numbers as integers", () => {
    const t = tableFromArrays({
      "Bytes In": Float64Array.from([782719936, 1024, 0]),
      "Time Interval": Float64Array.from([0, 1, 2]),
      "Duration (s)": Float64Array.from([0.5755, 0.0000064373, 0.02]),
      "Share (%)": Float64Array.from([93.0166, 4.1, Number.NaN])
    })
    const text = toText(t)
    assert.deepEqual(column(text, "Bytes In"), ["782,719,936", "1,024", "0"])
    assert.deepEqual(column(text, "Time Interval"), ["0", "1", "2"])
    assert.deepEqual(column(text, "Duration (s)"), ["0.5755", "6.44e-6", "0.0200"])
    assert.deepEqual(column(text, "Share (%)"), ["93.02", "4.10", "-"])
  })

  it("keeps every digit in CSV", () => {
    const t = tableFromArrays({ x: Float64Array.from([782719936, 0.0000064373]) })
    assert.equal(toCsv(t), "x\n782719936\n0.0000064373\n")
  })

  const text = fc.oneof(fc.string({ unit: "grapheme" }), fc.string(), fc.constantFrom("a,b", "say \"hi\"", "two\nlines", "cr\r", "", "é,ü"))
  const float = fc.oneof(fc.double(), fc.constantFrom(Number.NaN, -0, Infinity, 1e-7, 782719936))
  const int = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })
  const rows = fc.integer({ min: 0, max: 40 })
  /** A random table (strings in a dictionary, floats, ints, plain strings; nulls; one or two batches) and its CSV by the letter. */
  const tables = rows.chain((n) =>
    fc.record({
      words: fc.array(fc.option(text, { nil: null }), { minLength: n, maxLength: n }),
      floats: fc.array(fc.option(float, { nil: null }), { minLength: n, maxLength: n }),
      ints: fc.array(fc.option(int, { nil: null }), { minLength: n, maxLength: n }),
      plain: fc.array(fc.option(text, { nil: null }), { minLength: n, maxLength: n }),
      cut: fc.integer({ min: 0, max: n }),
      block: fc.integer({ min: 1, max: 7 }),
      mid: fc.integer({ min: 0, max: n })
    })
  ).map(({ block, cut, floats, ints, mid, plain, words }) => {
    const part = (from: number, to: number) =>
      new Table({
        "the word": vectorFromArray(words.slice(from, to), new Dictionary(new Utf8(), new Int32())),
        "x,y": vectorFromArray(floats.slice(from, to), new Float64()),
        n: vectorFromArray(ints.slice(from, to), new Int32()),
        s: vectorFromArray(plain.slice(from, to), new Utf8())
      })
    // two record batches, so rows cross from one batch's arrays to the next's
    const table = cut === 0 || cut === words.length ? part(0, words.length) : part(0, cut).concat(part(cut, words.length))
    const expected = naiveCsv(words.map((w, i) => [w, floats[i]!, ints[i]!, plain[i]!]), table.schema.fields.map((f) => f.name))
    return { block, expected, mid, table }
  })

  it("writes CSV cell by cell as RFC 4180 says, whatever the column types, nulls and batches (property)", () => {
    fc.assert(
      fc.property(tables, ({ block, expected, table }) => {
        assert.equal(toCsv(table), expected)
        assert.equal(Buffer.concat(Array.from(csvBlocks(table, block))).toString("utf8"), expected)
        // every dictionary's entries loaded ahead, as a large one's are
        const columns = csvColumns(table)
        assert.equal(Buffer.concat([csvHeader(table), ...csvRowBlocks(columns, 0, table.numRows, { blockBytes: block, aheadFrom: 0 })]).toString("utf8"), expected)
        // one buffer for every block, each taken (copied) before the next is asked for
        const taken = [csvHeader(table)]
        for (const b of csvRowBlocks(columns, 0, table.numRows, { blockBytes: block, reuse: true })) taken.push(Buffer.from(b))
        assert.equal(Buffer.concat(taken).toString("utf8"), expected)
      })
    )
  })

  it("writes the same CSV when a worker thread formats the rows after any split (property)", async () => {
    const helper = await csvHelper()
    try {
      await fc.assert(
        fc.asyncProperty(tables, async ({ expected, mid, table }) => {
          const columns = csvColumns(table)
          const n = table.numRows
          const rest = await helper.format(sliceColumns(columns, mid, n), n - mid)
          const got = Buffer.concat([csvHeader(table), ...csvRowBlocks(columns, 0, mid), ...rest]).toString("utf8")
          assert.equal(got, expected)
        }),
        { numRuns: 60 }
      )
    } finally {
      helper.close()
    }
  })

  it("keeps blocks of about the size asked for when one dictionary entry is very long, used or not", () => {
    // 600 KB: as a bound for every row it made every row a block of its own
    const long = "x,".repeat(300_000)
    const words = [long, "a", "b,c", "d\"e"]
    const n = 50_000
    const codes = Int32Array.from({ length: n }, (_, i) => 1 + (i % 3))
    const bytes = Buffer.from(words.join(""))
    const offsets = new Int32Array(words.length + 1)
    words.forEach((w, i) => (offsets[i + 1] = offsets[i]! + Buffer.byteLength(w)))
    const numbers = Float64Array.from({ length: n }, (_, i) => i / 7)
    for (const used of [false, true]) {
      if (used) codes[n >> 1] = 0 // one row names it
      const columns = [{ kind: "dictionary", codes, bytes, offsets }, { kind: "numbers", values: numbers }] as const
      const blocks = Array.from(csvRowBlocks(columns, 0, n, { blockBytes: 1 << 16 }))
      const cell = (i: number) => (codes[i] === 0 ? `"${long}"` : ["", "a", "\"b,c\"", "\"d\"\"e\""][codes[i]!]!)
      const expected = Array.from({ length: n }, (_, i) => `${cell(i)},${String(numbers[i])}\n`).join("")
      assert.equal(Buffer.concat(blocks).toString("utf8"), expected)
      // ~1 MB of short rows (and the long one) in 64 KiB blocks: tens of blocks, not one a row
      assert.ok(blocks.length < 40, `${blocks.length} blocks (${used ? "used" : "unused"})`)
    }
  })

  it("refuses a request it cannot post (data that cannot be cloned), and answers the next", async () => {
    const helper = await csvHelper()
    try {
      const unclonable = [{ kind: "text", cells: [(() => "x") as unknown as string] }] as const
      await assert.rejects(helper.format(unclonable, 1), /could not be cloned/)
      const rest = await helper.format([{ kind: "numbers", values: new Float64Array([1.5, NaN]) }], 2)
      assert.equal(Buffer.concat(rest).toString("utf8"), "1.5\n\n")
    } finally {
      helper.close()
    }
  })

  it("answers requests made at once in turn, each with its own rows (property)", async () => {
    const helper = await csvHelper()
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(tables, { minLength: 2, maxLength: 4 }), async (many) => {
          const replies = await Promise.all(many.map(({ table }) => helper.format(csvColumns(table), table.numRows)))
          replies.forEach((rest, i) => {
            const { expected, table } = many[i]!
            assert.equal(Buffer.concat([csvHeader(table), ...rest]).toString("utf8"), expected)
          })
        }),
        { numRuns: 20 }
      )
    } finally {
      helper.close()
    }
  })
})

describe("Format: bounded terminal tables", () => {
  it("issue 32 item 11: a 2 MB key prints cut to the column cap with an ellipsis, and a line says so; CSV keeps it whole", () => {
    const huge = "k".repeat(2 * 1024 * 1024)
    const t = tableFromArrays({ key: [huge, "short", "line\nbreak"], n: Float64Array.from([1, 2, 3]) })
    const text = toText(t)
    const lines = text.split("\n")
    assert.ok(text.length < 1000, `${text.length} characters`)
    assert.equal(lines[1]!.split(/\s{2,}/)[0], "k".repeat(maxCellWidth - 1) + "…")
    // every row has the capped width, not the widest value's
    assert.ok(lines.slice(0, 4).every((l) => l.length <= maxCellWidth + 2 + 1), lines.join("\n"))
    assert.match(lines[3]!, /^line break /, "a line break in a value stays on its row")
    assert.match(lines.at(-1)!, /1 cell\(s\) longer than 80 characters cut, ending in …; the CSV, JSON and Arrow outputs keep them whole/)
    assert.ok(toCsv(t).includes(huge), "CSV whole")
    // short values: no note, unchanged
    assert.doesNotMatch(toText(tableFromArrays({ key: ["a", "b"] })), /cut/)
  })
})
