import assert from "node:assert/strict"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { after, describe, it } from "node:test"
import { Effect, Exit, Layer } from "effect"
import * as Executor from "../../src/engine/Executor.ts"
import * as CA from "../../src/dsl/ChunkedArray.ts"
import type { DatasetSource } from "../../src/dsl/DatasetArray.ts"
import * as DatasetLabeled from "../../src/dsl/DatasetLabeled.ts"
import { isDslError } from "../../src/dsl/DslError.ts"
import { Normalize } from "../../src/dsl/Estimators.ts"
import * as Pipeline from "../../src/dsl/Pipeline.ts"
import * as NodeSource from "../../src/kernels/io/NodeDatasetSource.ts"
import { bytesOf, npy } from "./fixtures/files.ts"

const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "labeled-"))
after(() => NodeFs.rmSync(dir, { recursive: true, force: true }))
const write = (name: string, bytes: Uint8Array): string => {
  const file = NodePath.join(dir, name)
  NodeFs.writeFileSync(file, bytes)
  return file
}
const xFile = (name: string, rows: number, cols: number) =>
  write(name, npy("<f8", [rows, cols], bytesOf(Float64Array.from({ length: rows * cols }, (_, i) => (i % cols) * 10 + i / cols))))
const yFile = (name: string, rows: number) => write(name, npy("<i4", [rows], bytesOf(Int32Array.from({ length: rows }, (_, i) => i % 3))))

const layer = Layer.merge(Executor.layerSync, NodeSource.layer)
const run = <A, E>(e: Effect.Effect<A, E, Executor.Executor | DatasetSource>) => Effect.runPromise(Effect.provide(e, layer))
const failsWith = async (e: Effect.Effect<unknown, unknown, DatasetSource>, pattern: RegExp) => {
  const exit = await Effect.runPromiseExit(Effect.provide(e, NodeSource.layer))
  assert.ok(Exit.isFailure(exit))
  const err = exit.cause.reasons.find((r) => r._tag === "Fail")?.error
  assert.ok(isDslError(err), String(exit.cause))
  assert.match(err.message, pattern)
}

describe("DatasetLabeled", () => {
  const files = {
    train: { X: xFile("train_X.npy", 40, 2), y: yFile("train_y.npy", 40) },
    val: { X: xFile("val_X.npy", 10, 2), y: yFile("val_y.npy", 10) },
    test: { X: xFile("test_X.npy", 7, 2), y: yFile("test_y.npy", 7) }
  }

  it("pairs train / val / test X and y files, and its members feed a pipeline, typed", async () => {
    const out = await run(Effect.gen(function*() {
      const data = yield* DatasetLabeled.make("toy", files, { chunks: 8, dtypeX: "float64", dtypeY: "int32" })
      assert.deepEqual([data.train.X.shape, data.val.X.shape, data.test?.X.shape], [[40, 2], [10, 2], [7, 2]])
      assert.deepEqual(data.train.y.chunkRows, [8, 8, 8, 8, 8])
      const p = Pipeline.make("labeled", { log: () => {} })
      const scaled = p.add(new Normalize().transform, { X: data.train.X })
      p.add(Pipeline.stage("rows", ({ X, y }: { readonly X: CA.ChunkedArray<"float64">; readonly y: CA.ChunkedArray<"int32"> }) =>
        Effect.succeed(X.shape[0] === y.shape[0])), { X: scaled, y: data.train.y })
      const outputs = yield* p.run()
      const y = yield* CA.compute(data.val.y)
      return { same: outputs.get("rows"), y: Array.from(y.data as Int32Array) }
    }))
    assert.equal(out.same, true)
    assert.deepEqual(out.y, Array.from({ length: 10 }, (_, i) => i % 3))
  })

  it("a member of the wrong dtype is a compile-time error as a pipeline input", async () => {
    await run(Effect.gen(function*() {
      const data = yield* DatasetLabeled.make("toy", files, { chunks: 8, dtypeY: "int32" })
      const p = Pipeline.make("typed", { log: () => {} })
      // @ts-expect-error: Normalize needs a float64 X; the y labels are int32
      p.add(new Normalize().transform, { X: data.train.y })
    }))
  })

  it("rejects X and y of different row counts, naming the split and both shapes", () =>
    failsWith(
      DatasetLabeled.make("toy", { ...files, val: { X: files.val.X, y: files.train.y } }, { chunks: 8 }),
      /stage "DatasetLabeled\(toy\)\.val\.y": shape mismatch: expected \[10\], got \[40\]/
    ))

  it("rejects a split whose X has other columns than train's", () =>
    failsWith(
      DatasetLabeled.make("toy", { ...files, test: { X: xFile("test3_X.npy", 7, 3), y: files.test.y } }, { chunks: 8 }),
      /stage "DatasetLabeled\(toy\)\.test\.X": shape mismatch: expected \[n, 2\], got \[7, 3\]/
    ))

  it("rejects splits of different dtypes", () =>
    failsWith(
      DatasetLabeled.make("toy", { ...files, val: { X: files.val.y, y: files.val.y } }, { chunks: 8 }),
      /DatasetLabeled\(toy\)\.val\.X.*(dtype|shape) mismatch/
    ))

  it("names a bad member file before anything runs", () =>
    failsWith(
      DatasetLabeled.make("toy", { ...files, val: { X: write("bad_X.npy", new Uint8Array(3)), y: files.val.y } }, { chunks: 8 }),
      /bad_X\.npy: NotNpy/
    ))

  it("checks arrays made in memory the same way", () => {
    const a = CA.fromChunks("float64", [{ dtype: "float64", shape: [2, 1], data: new Float64Array(2) }])
    const b = CA.fromChunks("int32", [{ dtype: "int32", shape: [3], data: new Int32Array(3) }])
    assert.throws(() => DatasetLabeled.fromArrays("mem", { train: { X: a, y: b }, val: { X: a, y: b } }), /DatasetLabeled\(mem\)\.train\.y.*expected \[2\], got \[3\]/)
    const y2 = CA.fromChunks("int32", [{ dtype: "int32", shape: [2], data: new Int32Array(2) }])
    const i = CA.fromChunks("int32", [{ dtype: "int32", shape: [2, 1], data: new Int32Array(2) }])
    assert.throws(
      () => DatasetLabeled.fromArrays<CA.ChunkedArray["dtype"], "int32">("mem", { train: { X: a, y: y2 }, val: { X: i, y: y2 } }),
      /stage "DatasetLabeled\(mem\)\.val\.X": dtype mismatch: expected float64, got int32/
    )
  })
})
