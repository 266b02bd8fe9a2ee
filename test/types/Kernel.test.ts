/**
 * Type tests of `Kernel.module`: `tsc -p .` checks every `@ts-expect-error` below is
 * really an error. The function holding them is never called; the `it` runs the
 * positive cases.
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as Kernel from "../../src/engine/Kernel.ts"

const url = new URL("../fixtures/kernels/basic.ts", import.meta.url)
type Basic = typeof import("../fixtures/kernels/basic.ts")

/** Kernels that do not exist: compile errors (never called). */
export const misspeltKernels = () => {
  const K = Kernel.module<Basic>(url)
  // @ts-expect-error `constnat`: no such export
  void K.constnat
  // @ts-expect-error `notAFunction` is an export, but a number, not a kernel
  void K.notAFunction
  // @ts-expect-error a module named without its type (or names) has no kernels to give
  void Kernel.module(url).constant
  const N = Kernel.module(url, ["constant", "sum"])
  // @ts-expect-error `mix` is not among the names given
  void N.mix
  // @ts-expect-error a kernel ref is not a string
  const s: string = K.constant
  void s
}

/** Well-typed uses: compile, and are run below. */
const typedUses = () => {
  const K = Kernel.module<Basic>(url)
  const refs: ReadonlyArray<Kernel.KernelRef> = [K.constant, K.sum, K.mixAsync, K.arange]
  const N = Kernel.module(url.href, ["constant", "sum"])
  const named: Kernel.KernelRef = N.sum
  return { refs, named }
}

describe("typed Kernel.module", () => {
  it("issue 31 item 10: only the module's function exports are kernels, by their names", () => {
    assert.equal(typeof misspeltKernels, "function")
    const { refs, named } = typedUses()
    assert.deepEqual(refs.map((r) => r.name), ["constant", "sum", "mixAsync", "arange"])
    for (const r of refs) assert.equal(r.module, url.href)
    assert.deepEqual(named, Kernel.ref(url.href, "sum"))
  })
})
