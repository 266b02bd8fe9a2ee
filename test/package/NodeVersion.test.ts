/**
 * The library's Node.js floor (src/NodeVersion.ts): which versions it refuses and the one
 * line it says. The package test runs the built package on an older Node.
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { requiredMajor, unsupported, UnsupportedNodeError } from "../../src/NodeVersion.ts"

describe("NodeVersion", () => {
  it("issue 31 item 7: refuses a Node.js older than 24 with one line naming what was found and where", () => {
    const why = unsupported("20.20.2", "/usr/bin/node")
    assert.equal(why, "tessera needs Node.js 24 or newer, found v20.20.2 (/usr/bin/node)")
    assert.equal(unsupported("23.11.0"), "tessera needs Node.js 24 or newer, found v23.11.0")
    assert.ok(!why!.includes("\n"))
    assert.equal(new UnsupportedNodeError(why!).name, "UnsupportedNodeError")
  })

  it("accepts Node.js 24 and later, and a runtime that is not Node.js", () => {
    assert.equal(requiredMajor, 24)
    for (const v of ["24.0.0", "24.21.0", "25.1.0", "100.0.0"]) assert.equal(unsupported(v), undefined, v)
    assert.equal(unsupported(undefined), undefined)
    assert.equal(unsupported("not a version"), undefined)
  })

  it("lets this process (Node 24) import the package's entry", async () => {
    const tessera = await import("../../src/index.ts")
    assert.equal(typeof tessera.Pipeline.make, "function")
  })
})
