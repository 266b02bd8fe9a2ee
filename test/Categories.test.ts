/**
 * One short list of `@category` values (docs/api.md, "`@category`"): every doc comment in
 * src names one of them, and the docs list each.
 */
import assert from "node:assert/strict"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../", import.meta.url))
const categories = [
  "models", "constructors", "getters", "guards", "combinators", "errors", "constants", "layers",
  "analysis", "formatting", "encoding", "kernels", "cli", "testing", "utils"
]

const files = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : []
  )

describe("@category", () => {
  it("issue 37: every @category in src is one of docs/api.md's list", () => {
    const wrong: Array<string> = []
    for (const f of files(join(root, "src"))) {
      readFileSync(f, "utf8").split("\n").forEach((line, i) => {
        const m = /@category\s+([^*]*?)\s*(?:\*\/)?\s*$/.exec(line)
        if (m !== null && !categories.includes(m[1]!)) wrong.push(`${f.slice(root.length)}:${i + 1}: ${JSON.stringify(m[1])}`)
      })
    }
    assert.deepEqual(wrong, [], `categories outside the list (${categories.join(", ")})`)
  })

  it("issue 37: docs/api.md lists each category", () => {
    const doc = readFileSync(join(root, "docs/api.md"), "utf8")
    for (const c of categories) assert.match(doc, new RegExp(`^\\| \`${c}\` \\|`, "m"), c)
  })
})
