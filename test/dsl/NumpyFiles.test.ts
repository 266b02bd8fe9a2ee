// Cross-check with files written by NumPy itself (numpy.lib.format.write_array), when a
// python3 with numpy is on this machine; skipped with a message otherwise.
import assert from "node:assert/strict"
import { execFileSync } from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { after, describe, it } from "node:test"
import { Effect, Exit, Layer } from "effect"
import * as Executor from "../../src/engine/Executor.ts"
import * as CA from "../../src/dsl/ChunkedArray.ts"
import * as DatasetArray from "../../src/dsl/DatasetArray.ts"
import * as NodeSource from "../../src/kernels/io/NodeDatasetSource.ts"

const python = ["/usr/bin/python3", "python3"].find((p) => {
  try {
    execFileSync(p, ["-c", "import numpy"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})
const skip = python === undefined ? "python3 with numpy is not available" : false

const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "numpy-"))
after(() => NodeFs.rmSync(dir, { recursive: true, force: true }))

const script = `
import numpy as np, sys, os
from numpy.lib import format as F
d = sys.argv[1]
def save(name, a, version):
    with open(os.path.join(d, name), "wb") as f:
        F.write_array(f, a, version=version)
base = (np.arange(60).reshape(20, 3) * 7 - 100)
for v in [(1, 0), (2, 0), (3, 0)]:
    for dt in ["<f4", "<f8", "<i4", "<i8", "|u1"]:
        a = (base % 256 if dt == "|u1" else base * (10**12 if dt == "<i8" else 1) / (3 if dt[1] == "f" else 1)).astype(dt)
        save("a_%s_%d.npy" % (dt[1:], v[0]), a, v)
save("fortran.npy", np.asfortranarray(base.astype("<f8")), (1, 0))
save("big.npy", base.astype(">f8"), (1, 0))
save("half.npy", base.astype("<f2"), (1, 0))
`

describe("NumpyFiles", { skip }, () => {
  const layer = Layer.merge(Executor.layerSync, NodeSource.layer)
  const read = (file: string) =>
    Effect.runPromiseExit(Effect.provide(Effect.flatMap(DatasetArray.make(NodePath.join(dir, file), { chunks: 7 }), CA.compute), layer))

  it("reads every dtype and format version numpy writes, value for value", async () => {
    execFileSync(python!, ["-c", script, dir])
    const base = Array.from({ length: 60 }, (_, i) => i * 7 - 100)
    const want: Record<string, (v: number) => number | bigint> = {
      f4: (v) => Math.fround(v / 3),
      f8: (v) => v / 3,
      i4: (v) => v,
      i8: (v) => BigInt(v) * 10n ** 12n,
      u1: (v) => ((v % 256) + 256) % 256 // numpy's % is a floor modulo
    }
    for (const version of [1, 2, 3]) {
      for (const [dt, f] of Object.entries(want)) {
        const exit = await read(`a_${dt}_${version}.npy`)
        assert.ok(Exit.isSuccess(exit), `a_${dt}_${version}.npy: ${String(Exit.isFailure(exit) ? exit.cause : "")}`)
        assert.deepEqual(exit.value.shape, [20, 3])
        assert.deepEqual(Array.from(exit.value.data as ArrayLike<number | bigint>), base.map(f), `a_${dt}_${version}.npy`)
      }
    }
  })

  it("names numpy's Fortran-ordered, big-endian and float16 files as unsupported", async () => {
    for (const [file, pattern] of [["fortran.npy", /fortran\.npy: FortranOrder/], ["big.npy", /big\.npy: UnsupportedDType: dtype '>f8'/], ["half.npy", /half\.npy: UnsupportedDType: dtype '<f2'/]] as const) {
      const exit = await read(file)
      assert.ok(Exit.isFailure(exit))
      assert.match(String(exit.cause), pattern)
    }
  })
})
