/**
 * Output folders (`Directory.makeDirectory`): the same outcome as Node's recursive mkdir
 * wherever that one ends (folders made, a file in the way refused with the same code),
 * and a prompt error where Node's loops forever (a new name under /proc).
 */
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { mkdir } from "node:fs/promises"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { after, before, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import * as fc from "fast-check"
import { makeDirectory, makeDirectorySync } from "../../src/trace/Directory.ts"

const code = (e: unknown) => (e as { code?: unknown }).code

/** How making `path` ends: "made" (a folder now) or the error's code. */
const outcome = async (make: (path: string) => unknown, path: string): Promise<unknown> => {
  try {
    await make(path)
    return statSync(path).isDirectory() ? "made" : "not a folder"
  } catch (e) {
    return code(e)
  }
}

describe("makeDirectory", () => {
  let root = ""
  before(() => (root = mkdtempSync(join(tmpdir(), "tessera-dir-"))))
  after(() => rmSync(root, { recursive: true, force: true }))

  it("ends as Node's recursive mkdir does: folders made, existing ones kept, a file in the way refused (property)", async () => {
    let n = 0
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom("a", "b", "c d", "é"), { minLength: 1, maxLength: 5 }),
        fc.nat(5),
        fc.option(fc.nat(5), { nil: undefined }),
        fc.constantFrom("async", "sync"),
        async (segments, existing, fileAt, flavour) => {
          // two identical trees: one for Node's mkdir, one for ours
          const trees = [0, 1].map(() => join(root, `t${n++}`))
          for (const t of trees) {
            mkdirSync(join(t, ...segments.slice(0, Math.min(existing, segments.length))), { recursive: true })
            if (fileAt !== undefined && fileAt < segments.length) {
              const at = join(t, ...segments.slice(0, fileAt + 1))
              if (!existsSync(at)) {
                mkdirSync(dirname(at), { recursive: true })
                writeFileSync(at, "x")
              }
            }
          }
          const ours = flavour === "async" ? makeDirectory : makeDirectorySync
          const want = await outcome((p) => mkdir(p, { recursive: true }), join(trees[0]!, ...segments))
          assert.equal(await outcome(ours, join(trees[1]!, ...segments)), want)
        }
      ),
      { numRuns: 150 }
    )
  })

  it("keeps a relative path's spelling in its errors, and refuses an empty path as mkdir does", async () => {
    const cwd = process.cwd()
    process.chdir(root)
    try {
      writeFileSync("plain-file", "x")
      for (const make of [makeDirectory, makeDirectorySync]) {
        await assert.rejects(async () => make("plain-file/out"), (e: unknown) => code(e) === "ENOTDIR" && String(e).includes("'plain-file/out'"))
        await assert.rejects(async () => make(""), (e: unknown) => code(e) === "ENOENT")
      }
      await assert.rejects(mkdir("", { recursive: true }), (e: unknown) => code(e) === "ENOENT")
      await makeDirectory("rel/a")
      makeDirectorySync("rel/b/c")
      assert.ok(statSync(join(root, "rel", "a")).isDirectory() && statSync(join(root, "rel", "b", "c")).isDirectory())
    } finally {
      process.chdir(cwd)
    }
  })

  it("refuses a dangling symbolic link in the path with the system's error", async () => {
    const link = join(root, "dangling")
    symlinkSync(join(root, "nothing-here"), link)
    await assert.rejects(makeDirectory(join(link, "out")), (e: unknown) => code(e) === "EEXIST")
    assert.throws(() => makeDirectorySync(join(link, "out")), (e: unknown) => code(e) === "EEXIST")
  })

  it("fails at once for a new folder under /proc, where Node's recursive mkdir never returns", { skip: !existsSync("/proc/self") && "no /proc here" }, async () => {
    const path = "/proc/tessera-no-such-folder/out"
    await assert.rejects(makeDirectory(path), (e: unknown) => code(e) === "ENOENT" && String(e).includes("/proc/tessera-no-such-folder"))
    // the sync flavour in a child process: a loop there would stop this one for good
    const module = fileURLToPath(new URL("../../src/trace/Directory.ts", import.meta.url))
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", `
      const { makeDirectorySync } = await import(${JSON.stringify(module)})
      try { makeDirectorySync(${JSON.stringify(path)}) } catch (e) { console.log(e.code) }`], { encoding: "utf8", timeout: 20_000 })
    assert.equal(r.signal, null, "the sync flavour returned")
    assert.equal(r.stdout.trim(), "ENOENT", r.stderr)
  })
})
