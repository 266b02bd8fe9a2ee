import assert from "node:assert/strict"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { after, describe, it } from "node:test"
import { Field, Float64, Struct, Table, tableToIPC, vectorFromArray } from "apache-arrow"
import { Effect, Exit, Layer } from "effect"
import * as fc from "fast-check"
import * as Executor from "../../src/engine/Executor.ts"
import * as CA from "../../src/dsl/ChunkedArray.ts"
import * as DatasetArray from "../../src/dsl/DatasetArray.ts"
import { isDslError } from "../../src/dsl/DslError.ts"
import * as NodeSource from "../../src/kernels/io/NodeDatasetSource.ts"
import { readNpyRows } from "../../src/kernels/io/npy.ts"
import { arrowIpc, bytesOf, npy } from "./fixtures/files.ts"

const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "dataset-"))
after(() => NodeFs.rmSync(dir, { recursive: true, force: true }))
let n = 0
const write = (name: string, bytes: Uint8Array): string => {
  const file = NodePath.join(dir, `${n++}-${name}`)
  NodeFs.writeFileSync(file, bytes)
  return file
}

const layer = Layer.merge(Executor.layerSync, NodeSource.layer)
const run = <A, E>(e: Effect.Effect<A, E, Executor.Executor | DatasetArray.DatasetSource>) => Effect.runPromise(Effect.provide(e, layer))
const runExit = <A, E>(e: Effect.Effect<A, E, Executor.Executor | DatasetArray.DatasetSource>) =>
  Effect.runPromiseExit(Effect.provide(e, layer))

/** The array's data, chunk by chunk, concatenated. */
const values = (file: string, options: DatasetArray.DatasetArrayOptions<any>) =>
  run(Effect.gen(function*() {
    const X = yield* DatasetArray.make(file, options)
    const c = yield* CA.compute(X)
    return { X, data: Array.from(c.data as ArrayLike<number | bigint>) }
  }))

/** Fails before any task runs: the DslError's message, and no task was made. */
const failsWith = async (file: string, pattern: RegExp, options: DatasetArray.DatasetArrayOptions<any> = { chunks: 2 }, tag = "BadDataset"): Promise<void> => {
  const exit = await runExit(DatasetArray.make(file, options))
  assert.ok(Exit.isFailure(exit), "expected a failure")
  const err = exit.cause.reasons.find((r) => r._tag === "Fail")?.error
  assert.ok(isDslError(err), `expected a DslError, got ${String(exit.cause)}`)
  assert.match(err.message, pattern)
  assert.equal(err.reason._tag, tag)
}

describe("DatasetArray", () => {
  it("reads a .npy file in row chunks that concatenate to its data, for every format version", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 30 }), fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 40 }), fc.constantFrom(1, 2, 3), async (rows, cols, chunks, version) => {
        const data = Float64Array.from({ length: rows * cols }, (_, i) => i * 0.25 - 2)
        const file = write("x.npy", npy("<f8", [rows, cols], bytesOf(data), version))
        const r = await values(file, { chunks, dtype: "float64" })
        assert.deepEqual(r.X.shape, [rows, cols])
        assert.deepEqual(r.X.chunkRows, CA.splitRows(rows, chunks))
        assert.deepEqual(r.data, Array.from(data))
      }),
      { numRuns: 30 }
    )
  })

  it("reads 1-D .npy files of every dtype, int64 as BigInt", async () => {
    const cases = [["<f4", new Float32Array([1.5, -2, 3])], ["<i4", new Int32Array([-1, 7, 9])], ["<i8", new BigInt64Array([3n, -4n, 2n ** 40n])], ["|u1", new Uint8Array([9, 250, 0])]] as const
    for (const [descr, arr] of cases) {
      const r = await values(write("v.npy", npy(descr, [3], bytesOf(arr))), { chunks: 2 })
      assert.deepEqual(r.data, Array.from(arr as ArrayLike<number | bigint>))
      assert.deepEqual(r.X.chunkRows, [2, 1])
    }
  })

  it("reads .npy chunks on worker threads", async () => {
    const data = Int32Array.from({ length: 1000 }, (_, i) => i * 3)
    const file = write("w.npy", npy("<i4", [500, 2], bytesOf(data)))
    const c = await Effect.runPromise(
      Effect.provide(Effect.flatMap(DatasetArray.make(file, { chunks: 64 }), CA.compute), Layer.merge(Executor.layerWorkers({ workers: 2 }), NodeSource.layer))
    )
    assert.deepEqual(Array.from(c.data as Int32Array), Array.from(data))
  })

  it("rejects a file that is not .npy, naming the file", async () => {
    const file = write("bad.npy", new TextEncoder().encode("hello, not numpy at all"))
    await failsWith(file, /bad\.npy: NotNpy: missing the \\x93NUMPY magic/)
  })
  it("rejects a truncated .npy file before anything runs", () =>
    failsWith(write("t.npy", npy("<f8", [4], new Uint8Array(20))), /t\.npy: Truncated: shape \(4\) needs 32 data bytes, file has 20/))
  it("rejects a truncated .npy header", () =>
    failsWith(write("h.npy", npy("<f8", [4], new Uint8Array(32)).subarray(0, 30)), /h\.npy: Truncated: header needs/))
  it("rejects a .npy header that lies about the size", () =>
    failsWith(write("s.npy", npy("<f8", [2], new Uint8Array(32))), /s\.npy: SizeMismatch: shape \(2\) needs 16 data bytes, file has 32/))
  it("rejects a Fortran-ordered .npy file", () =>
    failsWith(write("f.npy", npy("<f8", [1, 1], new Uint8Array(8), 1, true)), /f\.npy: FortranOrder/))
  it("rejects an unsupported .npy dtype", () =>
    failsWith(write("c.npy", npy("<c16", [1], new Uint8Array(16))), /c\.npy: UnsupportedDType: dtype '<c16'/))
  it("issue 31 item 6: rejects a missing file as NotFound, naming it", () => failsWith(NodePath.join(dir, "nope.npy"), /nope\.npy: NotFound: no such file/))
  it("issue 31 item 6: a relative path's read tasks carry the absolute path, resolved where the array is made", async () => {
    const data = Float64Array.from({ length: 6 }, (_, i) => i + 0.5)
    const file = write("rel.npy", npy("<f8", [3, 2], bytesOf(data)))
    const cwd = process.cwd()
    process.chdir(dir)
    let X: CA.ChunkedArray<any>
    try {
      X = await run(DatasetArray.make(NodePath.basename(file), { chunks: 2 }))
    } finally {
      process.chdir(cwd)
    }
    // read from another directory: only an absolute path can work there
    const paths = [...X.specs.values()].map((t) => t.args[0])
    assert.ok(paths.length > 0 && paths.every((p) => p === file), `task paths ${JSON.stringify(paths)}`)
    const c = await run(CA.compute(X))
    assert.deepEqual(Array.from(c.data as Float64Array), Array.from(data))
  })
  it("issue 31 item 6: a relative Arrow path's read tasks carry the absolute path too; a missing one is NotFound", async () => {
    const a = Float64Array.from([1, 2, 3, 4, 5])
    const file = write("rel.arrow", arrowIpc({ a }, [3, 2]))
    const cwd = process.cwd()
    process.chdir(dir)
    let X: CA.ChunkedArray<any>
    try {
      X = await run(DatasetArray.make(NodePath.basename(file), { chunks: 2 }))
      await failsWith("missing.arrow", /^missing\.arrow: NotFound: no such file/)
    } finally {
      process.chdir(cwd)
    }
    const paths = [...X.specs.values()].map((t) => (t.args[0] as { path: string }).path)
    assert.ok(paths.length > 0 && paths.every((p) => p === file), `task paths ${JSON.stringify(paths)}`)
    assert.deepEqual(Array.from((await run(CA.compute(X))).data as Float64Array), Array.from(a))
  })
  it("issue 31 item 6: a read task whose file vanished fails NotFound naming the path, not NotNpy", () => {
    const missing = NodePath.join(dir, "gone.npy")
    assert.throws(() => readNpyRows(missing, { dtype: "float64", shape: [2], dataOffset: 128, fortranOrder: false } as never, 0, 1), (e: Error) =>
      e.message === `${missing}: NotFound: no such file`)
    assert.throws(() => readNpyRows("rel/gone.npy", { dtype: "float64", shape: [2], dataOffset: 128 } as never, 0, 1), /rel\/gone\.npy: NotFound: no such file \(relative to /)
  })
  it("rejects a file of no known format", () => failsWith(write("x.csv", new TextEncoder().encode("a,b\n1,2\n")), /x\.csv: UnknownFormat/))
  it("rejects a dtype other than the one asked for, naming the file", () =>
    failsWith(write("d.npy", npy("<i4", [2], new Uint8Array(8))), /stage "DatasetArray\(.*d\.npy\)": dtype mismatch: expected float64, got int32/, { chunks: 1, dtype: "float64" }, "DTypeMismatch"))
  it("rejects a 3-D array, naming both shapes", () =>
    failsWith(write("3d.npy", npy("<f8", [1, 1, 2], new Uint8Array(16))), /DatasetArray\(.*3d\.npy\)": shape mismatch: expected \[n, d\?\], got \[1, 1, 2\]/, { chunks: 2 }, "ShapeMismatch"))
  it("rejects chunks below one row", () => failsWith(write("z.npy", npy("<f8", [2], new Uint8Array(16))), /chunks: rows per chunk must be a positive integer, got 0/, { chunks: 0 }, "InvalidOption"))

  it("a .npy chunk reader names the file when the file got shorter since it was described", () => {
    const file = write("short.npy", npy("<f8", [4], new Uint8Array(32)))
    const h = NodeSource.describe(file).pipe(Effect.runSync)
    NodeFs.truncateSync(file, 60)
    assert.ok(h.format === "npy")
    assert.throws(() => readNpyRows(file, h, 2, 2), /short\.npy: Truncated: rows 2\.\.4/)
  })

  it("reads Arrow IPC files and streams by rows, whatever the record batches", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 1, max: 30 }),
        fc.constantFrom("file" as const, "stream" as const),
        async (batchRows, chunks, format) => {
          const rows = batchRows.reduce((a, b) => a + b, 0)
          const a = Float64Array.from({ length: rows }, (_, i) => i + 0.5)
          const b = Float64Array.from({ length: rows }, (_, i) => -i)
          const file = write(`t.${format === "file" ? "arrow" : "arrows"}`, arrowIpc({ a, b }, batchRows, format))
          const r = await values(file, { chunks, dtype: "float64" })
          assert.deepEqual(r.X.shape, [rows, 2])
          assert.deepEqual(r.data, Array.from({ length: rows * 2 }, (_, i) => (i % 2 === 0 ? a[i >> 1]! : b[i >> 1]!)))
          const one = await values(file, { chunks, columns: ["b"] })
          assert.deepEqual(one.X.shape, [rows])
          assert.deepEqual(one.data, Array.from(b))
        }
      ),
      { numRuns: 25 }
    )
  })

  it("reads Arrow file and stream chunks on worker threads", async () => {
    const a = Float64Array.from({ length: 3000 }, (_, i) => i / 7)
    const b = Float64Array.from({ length: 3000 }, (_, i) => -i)
    const files = (["file", "stream"] as const).map((format) => write(`w.${format}`, arrowIpc({ a, b }, [1000, 700, 1300], format)))
    const read = Effect.forEach(files, (file) => Effect.flatMap(DatasetArray.make(file, { chunks: 512 }), CA.compute))
    const chunks = await Effect.runPromise(Effect.provide(read, Layer.merge(Executor.layerWorkers({ workers: 2 }), NodeSource.layer)))
    for (const c of chunks) {
      assert.deepEqual(Array.from(c.data as Float64Array), Array.from({ length: 6000 }, (_, i) => (i % 2 === 0 ? a[i >> 1]! : b[i >> 1]!)))
    }
  })

  it("reads Arrow columns of every dtype, int64 as BigInt", async () => {
    const cols = { f4: new Float32Array([1.5, 2, -3]), i4: new Int32Array([1, -2, 3]), i8: new BigInt64Array([1n, -(2n ** 50n), 3n]), u1: new Uint8Array([0, 255, 7]) }
    const file = write("all.arrow", arrowIpc(cols, [2, 1]))
    for (const [name, arr] of Object.entries(cols)) {
      const r = await values(file, { chunks: 2, columns: [name] })
      assert.equal(r.X.dtype, { f4: "float32", i4: "int32", i8: "int64", u1: "uint8" }[name])
      assert.deepEqual(r.data, Array.from(arr as ArrayLike<number | bigint>))
    }
  })

  it("describes Arrow files from metadata: null counts of the selected column past nested and dictionary columns", async () => {
    const pType = new Struct([new Field("x", new Float64(), true), new Field("y", new Float64(), true)])
    const struct = (n: number) => vectorFromArray(Array.from({ length: n }, (_, i) => (i === 1 ? null : { x: i, y: null })), pType)
    const twoBatches = (a: Array<number | null>, format: "file" | "stream") => {
      const t = new Table({ p: struct(4), s: vectorFromArray(["u", "v", "u", "w"]), a: vectorFromArray(a, new Float64()) })
      const b = t.batches[0]!
      return tableToIPC(new Table([b.slice(0, 2), b.slice(2)]), format)
    }
    for (const format of ["file", "stream"] as const) {
      const ok = write(`nested.${format}`, twoBatches([1, 2, 3, 4], format))
      const r = await values(ok, { chunks: 3, columns: ["a"] })
      assert.deepEqual(r.data, [1, 2, 3, 4])
      await failsWith(write(`nestednull.${format}`, twoBatches([1, 2, null, 4], format)), /NullValues: column "a" has 1 nulls in record batch 1/, { chunks: 3, columns: ["a"] })
    }
  })

  it("rejects an Arrow stream cut inside a record batch, naming the file and the bytes", async () => {
    const good = arrowIpc({ a: new Float64Array([1, 2, 3, 4]) }, [2, 2], "stream")
    await failsWith(write("cut.arrows", good.subarray(0, good.length - 20)), /cut\.arrows: Truncated: message at byte \d+ needs bytes up to \d+, the file has \d+/)
  })

  /** Where `pattern` first occurs in `bytes` at or after `from`. */
  const find = (bytes: Uint8Array, pattern: ReadonlyArray<number>, from = 0): number => {
    for (let i = from; i + pattern.length <= bytes.length; i++) if (pattern.every((p, j) => bytes[i + j] === p)) return i
    throw new Error("pattern not found")
  }

  it("rejects an Arrow file whose footer claims two billion record batches at once, naming the byte", async () => {
    const good = arrowIpc({ a: Float64Array.from({ length: 9 }, (_, i) => i) }, [3, 3, 3])
    // the footer's record batch blocks: u32 count 3, then the first block's offset 8 (int64)
    const footerStart = good.length - 10 - new DataView(good.buffer).getInt32(good.length - 10, true)
    const at = find(good, [3, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0], footerStart)
    const bad = good.slice()
    new DataView(bad.buffer).setUint32(at, 0x7fffffff, true)
    const started = performance.now()
    await failsWith(write("blocks.arrow", bad), new RegExp(`NotArrow: the footer at byte ${footerStart}: footer record batch blocks claims 2147483647 elements of 24 bytes, \\d+ bytes follow \\(byte ${at}\\)`))
    assert.ok(performance.now() - started < 1000)
  })

  it("rejects an Arrow stream whose buffer lies outside its record batch's body, naming the byte", async () => {
    const good = arrowIpc({ a: Float64Array.from({ length: 4 }, (_, i) => i) }, [4], "stream")
    // the data buffer's region: offset 0, length 32 (two int64), after the validity buffer's (0, 0)
    const at = find(good, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0, 0, 0, 0, 0, 0])
    const bad = good.slice()
    bad[at + 16] = 200 // the data buffer now starts 200 bytes into a 32-byte body
    await failsWith(write("buffer.arrows", bad), /buffer\.arrows: NotArrow: record batch at byte \d+: buffer 1 \(body bytes 200\.\.232\) lies outside its 32-byte body \(byte \d+\)/)
  })

  it("rejects a bad Arrow file, naming the file", async () => {
    await failsWith(write("bad.arrow", new TextEncoder().encode("definitely not arrow")), /bad\.arrow: NotArrow/)
    const good = arrowIpc({ a: new Float64Array([1, 2, 3, 4]), s: new Int32Array(4) }, [2, 2])
    await failsWith(write("cut.arrow", good.subarray(0, good.length - 40)), /cut\.arrow: Truncated: starts like an Arrow IPC file but does not end with its footer/)
    const f = write("ok.arrow", good)
    await failsWith(f, /ok\.arrow: UnknownColumn: no column "zz" \(columns: a, s\)/, { chunks: 2, columns: ["zz"] })
    await failsWith(f, /ok\.arrow: MixedDTypes: column "s" is int32, earlier columns are float64/, { chunks: 2 })
    await failsWith(f, /columns select Arrow columns/, { chunks: 2, columns: ["a"], format: "npy" }, "InvalidOption")
    const nulls = tableToIPC(new Table({ a: vectorFromArray([1, null, 3], new Float64()) }), "file")
    await failsWith(write("null.arrow", nulls), /null\.arrow: NullValues: column "a" has 1 nulls in record batch 0/)
    const text = tableToIPC(new Table({ s: vectorFromArray(["x", "y"]) }), "stream")
    await failsWith(write("text.arrows", text), /text\.arrows: UnsupportedDType: column "s" is Dictionary<Int32, Utf8>/)
  })
})
