/**
 * Hostile input for the dataset readers: fast-check mutates bytes of valid `.npy` and
 * Arrow IPC files (flip a bit, set a byte, write a large int32, insert, delete,
 * truncate) and one child process with a 256 MB heap reads each case as Tessera would
 * (describe, then every row chunk). Every case must end in a result or a typed error
 * (DatasetFileError / NpyError) within the time bound; a crash of the child (V8 heap
 * abort, OOM kill, any signal or exit) or an untyped error fails the property with the
 * case, the fast-check seed and the child's stderr.
 *
 * `TESSERA_FUZZ_RUNS=N` runs N cases per format (default 30, kept small for `npm test`);
 * `TESSERA_FUZZ_SEED=S` replays a seed. The child, the mutations and the scratch folder
 * are `harness.ts`'s (shared with Traces.test.ts).
 */
import assert from "node:assert/strict"
import { after, before, describe, it } from "node:test"
import { Dictionary, Int32, makeTable, Message, RecordBatch, Table, tableToIPC, Utf8, vectorFromArray } from "apache-arrow"
import { Effect, Exit, Layer } from "effect"
import * as fc from "fast-check"
import * as Executor from "../../src/engine/Executor.ts"
import * as DatasetArray from "../../src/dsl/DatasetArray.ts"
import { isDslError } from "../../src/dsl/DslError.ts"
import * as NodeSource from "../../src/kernels/io/NodeDatasetSource.ts"
import { arrowIpc, bytesOf, npy } from "../dsl/fixtures/files.ts"
import { apply, CASE_TIMEOUT_MS, HEAP_MB, mutation, Reader, removeScratch, RUNS, SEED, write } from "./harness.ts"

const reader = new Reader()
before(() => reader.read(write("warm.npy", npy("<f8", [1], new Uint8Array(8)))).then(() => undefined))
after(() => {
  reader.close()
  removeScratch()
})

const a = Float64Array.from({ length: 40 }, (_, i) => i * 0.5)
const bcol = Float64Array.from({ length: 40 }, (_, i) => -i)

/** An Arrow file with a dictionary-encoded string column beside two float64 columns. */
const withDictionary = (): Uint8Array => {
  const table = makeTable({ a: a.slice(0, 6), b: bcol.slice(0, 6) }) as unknown as Table
  const words = vectorFromArray(["x", "y", "x", "z", "y", "x"], new Dictionary(new Utf8(), new Int32()))
  const withWords = new Table({ a: table.getChild("a")!, b: table.getChild("b")!, w: words })
  return tableToIPC(new Table(withWords.batches as Array<RecordBatch>), "file")
}

const fixtures = {
  npy: {
    "v1 2-D float64": npy("<f8", [20, 2], bytesOf(a)),
    "v2 1-D int32": npy("<i4", [12], bytesOf(Int32Array.from({ length: 12 }, (_, i) => i - 6)), 2),
    "v3 uint8": npy("|u1", [3, 5], new Uint8Array(15).fill(7), 3)
  },
  arrow: {
    "file, 3 batches": arrowIpc({ a, b: bcol }, [10, 25, 5], "file"),
    "stream, 2 batches": arrowIpc({ a, b: bcol }, [30, 10], "stream"),
    "file with a dictionary column": withDictionary()
  }
} as const

const fuzz = (format: keyof typeof fixtures) => {
  const names = Object.keys(fixtures[format]) as Array<string>
  return fc.assert(
    fc.asyncProperty(fc.constantFrom(...names), fc.array(mutation, { minLength: 1, maxLength: 4 }), async (name, mutations) => {
      const bytes = apply((fixtures[format] as Record<string, Uint8Array>)[name]!, mutations)
      const file = write(format === "npy" ? "f.npy" : "f.arrow", bytes)
      const r = await reader.read(file)
      assert.notEqual(r.outcome, "untyped", `${name} ${JSON.stringify(mutations)}: an untyped error\n${r.detail}`)
    }),
    // no shrinking: each try of a crashing case costs a child (or the whole time bound)
    { numRuns: RUNS, endOnFailure: true, ...(SEED === undefined ? {} : { seed: SEED }) }
  )
}

/** The byte of the first record batch's row count: the one whose change to 0x88 makes it huge. */
const batchLengthByte = (bytes: Uint8Array): number => {
  const metaStart = 8 + 8 // "ARROW1\0\0", then the batch message's 0xFFFFFFFF and length
  const metaLength = new DataView(bytes.buffer, bytes.byteOffset).getInt32(12, true)
  for (let i = 0; i < metaLength; i++) {
    const changed = bytes.slice(metaStart, metaStart + metaLength)
    changed[i] = 0x88
    try {
      if ((Message.decode(changed).header() as unknown as { length: number }).length > 1e14) return metaStart + i
    } catch {
      // not it
    }
  }
  throw new Error("no record batch length found")
}

describe("Readers", () => {
  it(`reads ${RUNS} mutated .npy files to a result or a typed error, in a ${HEAP_MB} MB child, ${CASE_TIMEOUT_MS / 1000} s each`, () => fuzz("npy"))
  it(`reads ${RUNS} mutated Arrow files and streams to a result or a typed error, in a ${HEAP_MB} MB child, ${CASE_TIMEOUT_MS / 1000} s each`, () => fuzz("arrow"))

  it("rejects an Arrow file whose one changed byte claims 1.5e14 rows, naming the batch and its body, without a crash", async () => {
    const valid = arrowIpc({ x: Float64Array.from({ length: 37 }, (_, i) => i) }, [37], "file")
    const at = batchLengthByte(valid)
    const bytes = valid.slice()
    bytes[at] = 0x88
    const file = write("rows.arrow", bytes)
    const r = await reader.read(file)
    assert.equal(r.outcome, "typed", r.detail)
    assert.match(r.detail, /NotArrow: record batch 0 \(at byte 8\) claims 149533581377573 rows, which need \d+ bytes of float64; its body has \d+ \(byte \d+\)/)
    // and through DatasetArray.make, in this process: a DslError before anything runs
    const exit = await Effect.runPromiseExit(Effect.provide(DatasetArray.make(file, { chunks: 1_000_000 }), Layer.merge(Executor.layerSync, NodeSource.layer)))
    assert.ok(Exit.isFailure(exit))
    const e = exit.cause.reasons.find((x) => x._tag === "Fail")?.error
    assert.ok(isDslError(e) && e.reason._tag === "BadDataset" && e.reason.problem === "NotArrow", String(exit.cause))
    assert.equal(typeof e.reason.offset, "number")
  })
})
