/**
 * README.md and docs/*.md run as written. Every fenced block tagged `sh` is run line by
 * line, and every block tagged `ts` is run as a module, the way a reader would paste
 * them on a fresh clone (after `npm install`). Blocks with no tag or another tag
 * (`text`: usage synopses, sample output) are not code and are not run.
 *
 * A `ts` block may hold several files: a line `// file: NAME.ts` starts a new one, and
 * the last file is the one run. A block whose fence names a file of the repository
 * (```` ```ts examples/own-pipeline/kernels.ts ````) shows that file: it must equal the
 * file, and is not run on its own (the `sh` blocks beside it run it). Blocks run in a scratch folder inside the repository
 * (under the git-ignored tmp/) that links the repository's top-level entries, so
 * `import … from "tessera/…"` resolves through the package's own exports (the compiled
 * dist/, which `npm test` builds first) and whatever a block writes stays out of the
 * work tree.
 *
 * Commands that are not run, and why, are listed in `notRun`.
 */
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { after, before, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { loadPromise } from "../src/analysis/Load.ts"
import { childEnv } from "./fixtures/env.ts"

const repo = fileURLToPath(new URL("../", import.meta.url))

/** Commands a reader runs but this test cannot, each with the reason. */
const notRun: ReadonlyArray<readonly [RegExp, string]> = [
  [/^npm (install|ci)\b/, "the test runs inside an installed checkout"],
  [/^npm test\b/, "this test is part of npm test"],
  [/^npm run bench\b/, "benchmarks take minutes and are not tests"],
  [/^export PATH=/, "the test runs every command with Node 24 first on PATH already"],
  [/^git clone\b/, "the test runs inside a clone"],
  [/^cd\b/, "the test runs in the repository root"]
]

interface Block {
  readonly file: string
  readonly line: number
  readonly lang: string
  /** the repository file the block shows, when its fence names one */
  readonly path?: string
  readonly code: string
}

const blocks = (file: string): Array<Block> => {
  const lines = readFileSync(join(repo, file), "utf8").split("\n")
  const out: Array<Block> = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)(?:\s+(\S+))?\s*$/.exec(lines[i]!)
    if (open === null) continue
    const start = i
    const body: Array<string> = []
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!)
    const code = body.join("\n")
    out.push(open[2] === undefined ? { file, line: start + 1, lang: open[1]!, code } : { file, line: start + 1, lang: open[1]!, path: open[2], code })
  }
  return out
}

const markdown = ["README.md", ...readdirSync(join(repo, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)]
const all = markdown.flatMap(blocks)

/** One shell command per logical line (backslash continuations joined, comments dropped). */
const commands = (code: string): Array<string> => {
  const out: Array<string> = []
  let cur = ""
  for (const raw of code.split("\n")) {
    const line = raw.trimEnd()
    if (cur === "" && (line.trim() === "" || line.trim().startsWith("#"))) continue
    if (line.endsWith("\\")) {
      cur += line.slice(0, -1) + " "
      continue
    }
    out.push((cur + line).trim())
    cur = ""
  }
  return out
}

let sandbox = ""
/** stdout of each ts block run, by `file:line` */
const printed = new Map<string, string>()
const env = childEnv({ PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}` })

describe("Docs", { timeout: 600_000 }, () => {
  before(() => {
    mkdirSync(join(repo, "tmp"), { recursive: true })
    sandbox = join(repo, "tmp", `docs-${process.pid}`)
    rmSync(sandbox, { recursive: true, force: true })
    mkdirSync(sandbox)
    for (const entry of readdirSync(repo)) {
      if (entry === "tmp" || entry === ".git") continue
      symlinkSync(join(repo, entry), join(sandbox, entry))
    }
  })
  after(() => {
    if (sandbox !== "") rmSync(sandbox, { recursive: true, force: true })
  })

  it("builds the package first (npm test does), so blocks can import tessera/…", () => {
    assert.ok(existsSync(join(repo, "dist", "src", "index.js")), "dist/ is missing: run npm run build (npm test runs it first)")
  })

  it("finds runnable blocks in README.md", () => {
    const readme = all.filter((b) => b.file === "README.md" && (b.lang === "sh" || b.lang === "ts"))
    assert.ok(readme.length >= 3, `README.md has ${readme.length} runnable blocks`)
  })

  for (const b of all) {
    if (b.lang === "sh") {
      for (const cmd of commands(b.code)) {
        const skip = notRun.find(([re]) => re.test(cmd))
        it(`${b.file}:${b.line} $ ${cmd}`, { skip: skip?.[1] ?? false }, () => {
          const r = spawnSync("bash", ["-c", cmd], { cwd: sandbox, env, encoding: "utf8", timeout: 180_000 })
          assert.equal(r.status, 0, `exit ${r.status}${r.signal !== null ? ` (${r.signal})` : ""}\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-3000)}`)
        })
      }
    } else if (b.path !== undefined) {
      const path = b.path
      it(`${b.file}:${b.line} shows ${path} as it is`, () => {
        assert.ok(existsSync(join(repo, path)), `${b.file}:${b.line} names ${path}, which does not exist`)
        assert.equal(b.code.trim(), readFileSync(join(repo, path), "utf8").trim(), `${b.file}:${b.line} differs from ${path}`)
      })
    } else if (b.lang === "ts") {
      it(`${b.file}:${b.line} (ts block) runs`, () => {
        const dir = join(sandbox, "blocks", `${b.file.replace(/\W/g, "_")}_${b.line}`)
        mkdirSync(dir, { recursive: true })
        let current = "main.ts"
        const files = new Map<string, Array<string>>([[current, []]])
        for (const line of b.code.split("\n")) {
          const m = /^\/\/ file: (\S+)/.exec(line)
          if (m !== null) {
            current = m[1]!
            files.set(current, [])
          } else files.get(current)!.push(line)
        }
        for (const [name, lines] of files) if (lines.join("").trim() !== "") writeFileSync(join(dir, name), lines.join("\n") + "\n")
        const r = spawnSync(process.execPath, [join(dir, current)], { cwd: sandbox, env, encoding: "utf8", timeout: 180_000 })
        assert.equal(r.status, 0, `exit ${r.status}${r.signal !== null ? ` (${r.signal})` : ""}\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-3000)}`)
        printed.set(`${b.file}:${b.line}`, r.stdout)
      })
    }
  }

  it("issue 31 item 14: README's In code prints the centres as rows, as README shows them", () => {
    const lines = readFileSync(join(repo, "README.md"), "utf8").split("\n")
    const heading = lines.indexOf("## In code") + 1
    const readme = all.filter((b) => b.file === "README.md" && b.line > heading)
    const code = readme.find((b) => b.lang === "ts")
    const shown = readme.find((b) => b.lang === "text" && b.line > (code?.line ?? Infinity))
    assert.ok(heading > 0 && code !== undefined && shown !== undefined, "README's In code: a ts block, then a text block of what it prints")
    const out = printed.get(`README.md:${code.line}`)
    assert.ok(out !== undefined, `README.md:${code.line} did not run (its own test failed)`)
    assert.doesNotMatch(out, /Float64Array/)
    const outLines = out.split("\n")
    for (const line of shown.code.split("\n")) assert.ok(outLines.includes(line), `README shows ${JSON.stringify(line)}; the block printed:\n${out}`)
    // the rows are the blobs' centres: each within 0.1 of one of them, every blob found once
    const blobs = JSON.parse(/centers: (\[\[.*?\]\])/.exec(code.code)![1]!) as Array<[number, number]>
    const rows = [...out.matchAll(/^centre \d+: (-?\d+\.\d+), (-?\d+\.\d+)$/gm)].map((m) => [Number(m[1]), Number(m[2])])
    assert.equal(rows.length, blobs.length)
    const found = rows.map(([x, y]) => blobs.findIndex(([bx, by]) => Math.abs(bx - x!) < 0.1 && Math.abs(by - y!) < 0.1))
    assert.deepEqual([...found].sort(), blobs.map((_, i) => i), `centres ${JSON.stringify(rows)} against blobs ${JSON.stringify(blobs)}`)
  })

  it("issue 31 item 10: the walkthrough's pipeline (examples/own-pipeline) runs with tessera run in a temp dir, profiled, with a report", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tessera-own-"))
    try {
      const run = (args: ReadonlyArray<string>) => {
        const r = spawnSync(process.execPath, args, { cwd: dir, env, encoding: "utf8", timeout: 180_000 })
        assert.equal(r.status, 0, `${args.join(" ")}: exit ${r.status}${r.signal !== null ? ` (${r.signal})` : ""}\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-3000)}`)
        return r.stdout
      }
      run([join(repo, "examples/own-pipeline/make-data.ts"), "own.npy", "30000"])
      const out = run([join(repo, "src/cli/main.ts"), "run", join(repo, "examples/own-pipeline/pipeline.ts"), "--workers", "2", "--profile", "own", "--report", "own.html"])
      for (const line of ["signedLog: float64 [30000, 2] in 3 chunks", "Normalize.transform: float64 [30000, 2] in 3 chunks", "KMeans.fitPredict: int32 [30000] in 3 chunks"]) {
        assert.ok(out.includes(line), `no "${line}" in:\n${out}`)
      }
      const files = readdirSync(dir)
      const trace = files.find((f) => /^own-TracePlugin-.*\.msgpack$/.test(f))
      const resources = files.find((f) => /^own-ResourceMonitor-.*\.msgpack$/.test(f))
      assert.ok(trace !== undefined && resources !== undefined && files.includes("own.html"), `files: ${files.join(", ")}`)
      // the stage's name reaches its tasks: each kernel's tasks carry the stage that made them
      const tables = await loadPromise([join(dir, trace), join(dir, resources)])
      const stages = new Map<string, Set<string | null>>()
      for (const r of tables.tasks) {
        const f = r.function ?? ""
        if (!stages.has(f)) stages.set(f, new Set())
        stages.get(f)!.add(r.stage)
      }
      assert.deepEqual(stages.get("signed_log"), new Set(["signedLog"]))
      assert.deepEqual(stages.get("abs_max"), new Set(["absMax"]))
      assert.deepEqual(stages.get("abs_max-combine"), new Set(["absMax"]))
      assert.match(readFileSync(join(dir, "own.html"), "utf8"), /signedLog/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("every ts block typechecks as a consumer's file would (module nodenext, strict)", () => {
    const dir = join(sandbox, "blocks")
    if (!existsSync(dir)) return
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { module: "nodenext", target: "es2024", strict: true, noEmit: true, skipLibCheck: true, types: ["node"] },
        include: ["**/*.ts"]
      })
    )
    const r = spawnSync(join(repo, "node_modules/.bin/tsc"), ["-p", dir], { cwd: sandbox, env, encoding: "utf8", timeout: 180_000 })
    assert.equal(r.status, 0, r.stdout + r.stderr)
  })
})
