/**
 * `bin/tessera.js` on Node 24: the compile cache it enables reaches the worker threads
 * (and processes) the command starts, through `NODE_COMPILE_CACHE`; with
 * `NODE_DISABLE_COMPILE_CACHE=1` nobody uses one.
 */
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { fileURLToPath } from "node:url"

const bin = fileURLToPath(new URL("../../bin/tessera.js", import.meta.url))
const fixture = fileURLToPath(new URL("./fixtures/printCompileCache.ts", import.meta.url))
const dir = mkdtempSync(join(tmpdir(), "tessera-bin-"))
after(() => rmSync(dir, { recursive: true, force: true }))

const workerCache = (env: NodeJS.ProcessEnv) => {
  const clean: NodeJS.ProcessEnv = { ...process.env, TMPDIR: dir, ...env }
  delete clean.NODE_COMPILE_CACHE
  if (env.NODE_DISABLE_COMPILE_CACHE === undefined) delete clean.NODE_DISABLE_COMPILE_CACHE
  const r = spawnSync(process.execPath, [bin, "run", fixture], { encoding: "utf8", env: clean, cwd: dir })
  assert.equal(r.status, 0, r.stderr)
  return /worker compile cache: (.*)/.exec(r.stdout)?.[1]
}

describe("bin/tessera.js", () => {
  it("hands its compile cache to the worker threads a command starts", () => {
    const got = workerCache({})
    assert.ok(got !== undefined && got.startsWith(join(dir, "node-compile-cache")), `worker cache: ${got}`)
  })

  it("uses none when NODE_DISABLE_COMPILE_CACHE=1", () => {
    assert.equal(workerCache({ NODE_DISABLE_COMPILE_CACHE: "1" }), "none")
  })
})
