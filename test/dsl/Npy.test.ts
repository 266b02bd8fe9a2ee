import assert from "node:assert/strict"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { describe, it } from "node:test"
import * as fc from "fast-check"
import { decodeUnsafe, NpyError, readNpy } from "../../src/kernels/io/npy.ts"
import { bytesOf, npy } from "./fixtures/files.ts"

describe("Npy", () => {
  it("reads float64 2-D files of every format version in row chunks that concatenate to the data", () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 50 }), fc.constantFrom(1, 2, 3), (rows, cols, chunkRows, version) => {
      const data = Float64Array.from({ length: rows * cols }, (_, i) => i * 0.5 - 3)
      const chunks = decodeUnsafe("x.npy", npy("<f8", [rows, cols], bytesOf(data), version), chunkRows)
      assert.equal(chunks.length, Math.ceil(rows / chunkRows))
      const all = chunks.flatMap((c) => Array.from(c.data as Float64Array))
      assert.deepEqual(all, Array.from(data))
      assert.deepEqual(chunks[0]!.shape, [Math.min(rows, chunkRows), cols])
      assert.ok(chunks[0]!.data.buffer instanceof SharedArrayBuffer)
    }), { numRuns: 50 })
  })
  it("reads float32, int32, int64 and uint8 dtypes", () => {
    for (const [descr, arr, dtype] of [["<f4", new Float32Array([1.5, 2]), "float32"], ["<i4", new Int32Array([-1, 7]), "int32"], ["<i8", new BigInt64Array([3n, -4n]), "int64"], ["|u1", new Uint8Array([9, 250]), "uint8"]] as const) {
      const [c] = decodeUnsafe("x.npy", npy(descr, [2], bytesOf(arr)))
      assert.equal(c!.dtype, dtype)
      assert.deepEqual(Array.from(c!.data as ArrayLike<unknown>), Array.from(arr as ArrayLike<unknown>))
    }
  })
  const fails = (bytes: Uint8Array, reason: string) =>
    assert.throws(() => decodeUnsafe("bad.npy", bytes), (e: unknown) => e instanceof NpyError && e.reason === reason && e.message.startsWith("bad.npy"))
  it("rejects a file without the magic", () => fails(new TextEncoder().encode("hello, not numpy at all"), "NotNpy"))
  it("rejects Fortran order", () => fails(npy("<f8", [1, 1], bytesOf(new Float64Array(1)), 1, true), "FortranOrder"))
  it("rejects an unsupported dtype", () => fails(npy("<c16", [1], new Uint8Array(16)), "UnsupportedDType"))
  it("rejects truncated data", () => fails(npy("<f8", [4], new Uint8Array(20)), "Truncated"))
  it("rejects a truncated header", () => fails(npy("<f8", [4], new Uint8Array(32)).subarray(0, 30), "Truncated"))
  it("rejects a header that claims fewer elements than the data holds", () => fails(npy("<f8", [2], new Uint8Array(32)), "SizeMismatch"))
  it("reads a file from disk and names a missing file", () => {
    const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "npy-"))
    const file = NodePath.join(dir, "a.npy")
    NodeFs.writeFileSync(file, npy("<i4", [3], bytesOf(new Int32Array([1, 2, 3]))))
    assert.deepEqual(Array.from(readNpy(file)[0]!.data as Int32Array), [1, 2, 3])
    assert.throws(() => readNpy(file + ".missing"), /a\.npy\.missing/)
    NodeFs.rmSync(dir, { recursive: true })
  })
})
