/**
 * The repository needs nothing beside it: no file refers to a `shared` folder next to
 * the checkout (a path that climbs out of the repository and into `shared`, or a
 * `shared` data folder), since a fresh clone or a CI runner has none. The DASF traces
 * the tests read live in test/fixtures/dasf-small, and git must keep them (the
 * .gitignore excludes `*.msgpack` except under test/fixtures).
 *
 * The patterns below are assembled from pieces so that this file does not match them.
 */
import assert from "node:assert/strict"
import { execFileSync } from "node:child_process"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../", import.meta.url))
const fixtures = "test/fixtures/dasf-small"

/** Folders a tree walk skips: dependencies, build output, git's own. */
const skipped = new Set(["node_modules", "dist", ".git", "out", "tmp"])

const walk = (dir: string, prefix = ""): Array<string> =>
  readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const path = prefix + e.name
    if (e.isDirectory()) return skipped.has(e.name) ? [] : walk(join(dir, e.name), path + "/")
    return e.isFile() ? [path] : []
  })

/**
 * The repository's files, relative to its root: what git tracks plus untracked files it
 * would add (not ignored), in a git checkout; else every file outside `skipped`.
 */
const listFiles = (): { readonly files: ReadonlyArray<string>; readonly git: boolean } => {
  if (existsSync(join(root, ".git"))) {
    try {
      const out = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
        cwd: root,
        encoding: "utf8",
        maxBuffer: 64 * 1024 * 1024,
        stdio: ["ignore", "pipe", "ignore"]
      })
      // Only regular files: not one deleted in the work tree but still in the index, nor
      // a symlinked node_modules (git lists a link as an untracked file: `node_modules/`
      // in .gitignore matches directories only).
      const files = out.split("\0").filter((f) =>
        f !== "" && !skipped.has(f.split("/")[0]) && existsSync(join(root, f)) && statSync(join(root, f)).isFile()
      )
      return { files, git: true }
    } catch {
      // no git on PATH, or git refuses the checkout (e.g. safe.directory): walk instead
    }
  }
  return { files: walk(""), git: false }
}

const sep = "[\\\\/]"
const word = "sha" + "red"
/** References to the parent folder's `shared`, each with what it means. */
const patterns: ReadonlyArray<readonly [RegExp, string]> = [
  [new RegExp(`(?:\\.\\.${sep})+${word}(?![\\w-])`), "a relative path up and into the parent's shared folder"],
  [new RegExp(`(?<![\\w.-])${word}${sep}data${sep}`), "the shared data folder"],
  [new RegExp(`["'\`]\\.\\.["'\`]\\s*,\\s*["'\`]${word}["'\`]`), "a path joined from \"..\" and the shared folder"]
]

describe("self-contained repository", () => {
  const { files, git } = listFiles()

  it("lists the repository's files", () => {
    assert.ok(files.length > 50, `only ${files.length} files found under ${root}`)
    assert.ok(files.includes("package.json"))
    assert.ok(files.includes("test/SelfContained.test.ts"))
  })

  it("has no file referring to the shared folder beside the repository", () => {
    const hits: Array<string> = []
    for (const file of files) {
      const bytes = readFileSync(join(root, file))
      if (bytes.includes(0)) continue // binary (msgpack fixtures, images): no paths to read
      const lines = bytes.toString("utf8").split("\n")
      lines.forEach((line, i) => {
        for (const [re, what] of patterns) {
          if (re.test(line)) hits.push(`${file}:${i + 1}: ${what}: ${line.trim().slice(0, 160)}`)
        }
      })
    }
    assert.deepEqual(hits, [], `files refer to a folder that a fresh clone does not have:\n${hits.join("\n")}`)
  })

  it("keeps DASF's small run in test/fixtures/dasf-small", () => {
    const expected = [
      "README.md",
      "small-TracePlugin.msgpack",
      "small-ResourceMonitor.msgpack",
      "small-ResourceMonitor-gpusurrogate.msgpack",
      "small-traceonly-function_bottleneck.csv",
      "small-traceonly-task_bottleneck.csv",
      "small-traceonly-task_balance.csv",
      "small-gpusurrogate-function_bottleneck.csv",
      "small-gpusurrogate-task_bottleneck.csv",
      "small-gpusurrogate-task_balance.csv",
      "small-pair-task_balance.csv",
      "small-run.json"
    ]
    for (const name of expected) {
      const path = `${fixtures}/${name}`
      assert.ok(existsSync(join(root, path)), `${path} is missing`)
      assert.ok(statSync(join(root, path)).size > 0, `${path} is empty`)
      // in a checkout, git must list it: tracked, or at least not ignored (*.msgpack is)
      if (git) assert.ok(files.includes(path), `${path} is not in git (ignored by .gitignore?)`)
    }
    const msgpack = files.filter((f) => f.startsWith(`${fixtures}/`) && f.endsWith(".msgpack"))
    assert.ok(msgpack.length >= 3, `msgpack fixtures found: ${msgpack.join(", ") || "none"}`)
  })
})
