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
  /** A v1 `.npy` file whose header dict is `dict` as written, then `data`. */
  const withHeader = (dict: string, data: Uint8Array): Uint8Array => {
    const header = dict + " ".repeat(63 - ((10 + dict.length) % 64)) + "\n"
    const out = new Uint8Array(10 + header.length + data.length)
    out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0])
    new DataView(out.buffer).setUint16(8, header.length, true)
    out.set(new TextEncoder().encode(header), 10)
    out.set(data, 10 + header.length)
    return out
  }
  const failsAt = (bytes: Uint8Array, reason: string, pattern: RegExp, offset: number) =>
    assert.throws(() => decodeUnsafe("bad.npy", bytes), (e: unknown) => {
      assert.ok(e instanceof NpyError, String(e))
      assert.equal(e.reason, reason)
      assert.match(e.message, pattern)
      assert.equal(e.offset, offset)
      return true
    })
  it("parses the header as a Python literal: a shape inside another string does not mislead it", () => {
    const data = bytesOf(Float64Array.from([1, 2]))
    // a descr that holds the text of a shape: the real shape (2,) is read, the string stays a dtype name
    failsAt(withHeader("{'descr': \"'shape': (5, 2)\", 'fortran_order': False, 'shape': (2,), }", data), "UnsupportedDType", /dtype ''shape': \(5, 2\)'/, 20)
    // keys in any order, double quotes, Python 2's long suffix: all as NumPy reads them
    const [c] = decodeUnsafe("ok.npy", withHeader("{\"shape\": (2L,), 'fortran_order': False, 'descr': '<f8'}", data))
    assert.deepEqual(c!.shape, [2])
    assert.deepEqual(Array.from(c!.data as Float64Array), [1, 2])
  })
  it("rejects a header with a key NumPy does not write, naming its byte", () =>
    failsAt(withHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'x': \"'shape': (5,2)\"}", new Uint8Array(16)), "BadHeader", /key 'x' .* at byte 66/, 66))
  it("rejects a header that is not a literal, naming the byte where it stops making sense", () =>
    failsAt(withHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (2,) 'x'}", new Uint8Array(16)), "BadHeader", /expected ',' or '}' in a dict, found "'" at byte 65/, 65))
  it("rejects a negative or non-integer dimension, naming its byte", () => {
    failsAt(withHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (2, -1), }", new Uint8Array(16)), "BadHeader", /holds -1, not a non-negative integer at byte 64/, 64)
    failsAt(withHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (2.5,), }", new Uint8Array(16)), "BadHeader", /only integers are accepted here at byte 62/, 62)
  })
  it("rejects a shape whose byte count overflows, before allocating", () =>
    failsAt(withHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", new Uint8Array(16)), "Truncated", /needs 147573952589676412928 data bytes, file has 16 \(data from byte 128\)/, 128))
  it("rejects a header length over the limit without reading it", () => {
    const bytes = npy("<f8", [1], new Uint8Array(8), 2)
    new DataView(bytes.buffer).setUint32(8, 0x7fffffff, true)
    failsAt(bytes, "BadHeader", /header length 2147483647 \(byte 8\) is over/, 8)
  })
  it("reads a file from disk and names a missing file", () => {
    const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "npy-"))
    const file = NodePath.join(dir, "a.npy")
    NodeFs.writeFileSync(file, npy("<i4", [3], bytesOf(new Int32Array([1, 2, 3]))))
    assert.deepEqual(Array.from(readNpy(file)[0]!.data as Int32Array), [1, 2, 3])
    assert.throws(() => readNpy(file + ".missing"), /a\.npy\.missing/)
    NodeFs.rmSync(dir, { recursive: true })
  })
})
