/**
 * trace/OutputFile: an output is written beside its name and renamed once whole; a
 * failure, a producer's exception or the process's exit leaves the previous file (or
 * none) and no temporary file; an output that is an input (same device and inode) is
 * refused (issue 32 items 1 and 3).
 */
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { chmodSync, linkSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, before, describe, it } from "node:test"
import { findInputAsOutput, openOutput, OutputIsInput, writeOutput, writeOutputFile } from "../../src/trace/OutputFile.ts"

const moduleUrl = new URL("../../src/trace/OutputFile.ts", import.meta.url).href

describe("OutputFile", () => {
  let dir = ""
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "tessera-output-"))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))
  const temporaries = (d: string) => readdirSync(d).filter((f) => f.includes(".tmp-"))

  it("issue 32 item 3: a committed output is whole, keeps an existing file's permission bits, and leaves no temporary file", async () => {
    const d = mkdtempSync(join(dir, "commit-"))
    const out = join(d, "out.csv")
    writeFileSync(out, "old\n")
    chmodSync(out, 0o640)
    await writeOutput(out, async (o) => {
      await o.write("a,b\n")
      // the old contents stay in place until the commit
      assert.equal(readFileSync(out, "utf8"), "old\n")
      assert.equal(temporaries(d).length, 1)
      await o.write(new Uint8Array([49, 44, 50, 10]))
      assert.equal(o.bytes(), 8)
    })
    assert.equal(readFileSync(out, "utf8"), "a,b\n1,2\n")
    assert.equal(statSync(out).mode & 0o777, 0o640)
    assert.deepEqual(temporaries(d), [])
  })

  it("issue 32 item 3: a producer that fails leaves the previous output as it was and no temporary file", async () => {
    const d = mkdtempSync(join(dir, "fail-"))
    const out = join(d, "out.json")
    writeFileSync(out, "previous")
    await assert.rejects(
      writeOutput(out, async (o) => {
        await o.write("{\"traceEvents\": [")
        throw new Error("the input broke")
      }),
      /the input broke/
    )
    assert.equal(readFileSync(out, "utf8"), "previous")
    assert.deepEqual(temporaries(d), [])
    // none before: none after
    await assert.rejects(writeOutput(join(d, "new.json"), () => Promise.reject(new Error("no"))))
    assert.deepEqual(readdirSync(d), ["out.json"])
  })

  it("issue 32 item 3: a process that exits mid-write (an interrupt's exit) removes its temporary file", () => {
    const d = mkdtempSync(join(dir, "exit-"))
    writeFileSync(join(d, "out.csv"), "old\n")
    const script = `
      const { openOutput } = await import(${JSON.stringify(moduleUrl)})
      const o = await openOutput(${JSON.stringify(join(d, "out.csv"))})
      await o.write("half a file")
      process.exit(143)
    `
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 60_000 })
    assert.equal(r.status, 143, r.stderr)
    assert.deepEqual(readdirSync(d), ["out.csv"])
    assert.equal(readFileSync(join(d, "out.csv"), "utf8"), "old\n")
  })

  it("issue 32 item 1: an output hard-linked or symlinked to an input is refused before anything is written", async () => {
    const d = mkdtempSync(join(dir, "link-"))
    const input = join(d, "trace.msgpack")
    writeFileSync(input, "the trace")
    linkSync(input, join(d, "rep.html"))
    symlinkSync("trace.msgpack", join(d, "sym.html"))
    const e = await writeOutputFile(join(d, "rep.html"), "<!DOCTYPE html>", { inputs: [input], flag: "--output" }).then(() => undefined, (x: unknown) => x)
    assert.ok(e instanceof OutputIsInput)
    assert.equal(e.how, "hard link")
    assert.match(e.message, /^--output .*rep\.html is the same file as the input .*trace\.msgpack \(a hard link to it\)/)
    assert.equal(findInputAsOutput([join(d, "sym.html")], [input])?.how, "symbolic link")
    assert.equal(findInputAsOutput([join(d, "sub", "..", "trace.msgpack")], [input])?.how, "same path")
    assert.equal(findInputAsOutput([join(d, "other.html")], [input]), undefined)
    assert.equal(readFileSync(input, "utf8"), "the trace")
    assert.deepEqual(temporaries(d), [])
  })

  it("a symbolic link to another file is written through: the link kept, its target replaced", async () => {
    const d = mkdtempSync(join(dir, "through-"))
    writeFileSync(join(d, "target.csv"), "old")
    symlinkSync("target.csv", join(d, "link.csv"))
    await writeOutputFile(join(d, "link.csv"), "new")
    assert.equal(readFileSync(join(d, "target.csv"), "utf8"), "new")
    assert.ok(readdirSync(d).includes("link.csv"))
    assert.equal(readFileSync(join(d, "link.csv"), "utf8"), "new")
  })

  it("an output that cannot be created names the output, not the temporary file; makeFolder makes its folders", async () => {
    const d = mkdtempSync(join(dir, "missing-"))
    const out = join(d, "no", "such", "out.arrow")
    const e = await openOutput(out).then(() => undefined, (x: unknown) => x as NodeJS.ErrnoException & { output?: string })
    assert.equal(e?.code, "ENOENT")
    assert.equal(e?.output, out)
    assert.ok(e?.message.includes(out) && !e.message.includes(".tmp-"), e?.message)
    await writeOutputFile(out, "x", { makeFolder: true })
    assert.equal(readFileSync(out, "utf8"), "x")
  })
})
