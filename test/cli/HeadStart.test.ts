/**
 * `tessera analyze`'s head start: which command lines start decoding before the CLI
 * loads, and that the command takes over only a decoding of exactly its databases and
 * columns.
 */
import assert from "node:assert/strict"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { columnsOfNames, dasfAnalyses } from "../../src/analysis/AnalysisNames.ts"
import { preParseAnalyze, splitArguments } from "../../src/cli/analyzeArgs.ts"
import { abortHeadStart, startHeadStart, takeHeadStart } from "../../src/cli/headStart.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-head-start-"))
after(() => rmSync(dir, { recursive: true, force: true }))

const trace = join(dir, "t.msgpack")
writeFileSync(
  trace,
  encodeRecords(Array.from({ length: 50 }, (_, i) => ({
    name: "Compute",
    timestamp: 1 + i,
    phase: "X" as const,
    process_id: "h",
    thread_id: "worker-h-0",
    duration: 0.5,
    args: { key: `('f-0', ${i})`, name: "f", state: "memory", size: 8, dependencies: [] }
  })))
)

describe("head start", () => {
  it("reads plain analyze command lines as the CLI does, and refuses anything else", () => {
    const dasf = [...dasfAnalyses]
    assert.deepEqual(preParseAnalyze(["analyze", "-d", "a.msgpack", "b.msgpack", "-o", "out"]), { databases: ["a.msgpack", "b.msgpack"], analyses: dasf })
    assert.deepEqual(preParseAnalyze(["--verbose", "analyze", "--db=a", "-a", "task_balance", "function_bottleneck", "--head", "5"]), {
      databases: ["a"],
      analyses: ["task_balance", "function_bottleneck"]
    })
    assert.deepEqual(preParseAnalyze(["analyze", "a", "task_bottleneck", "--format=arrow", "--log-level", "warn"]), { databases: ["a"], analyses: ["task_bottleneck"] })
    for (
      const refused of [
        ["report", "-d", "a"],
        ["analyze"],
        ["analyze", "-d", "a", "--help"],
        ["analyze", "-d", "a", "-h"],
        ["analyze", "-d", "a", "--bogus"],
        ["analyze", "-d", "a", "-o"],
        ["analyze", "-d", "a", "--", "b"],
        ["help", "analyze"]
      ]
    ) assert.equal(preParseAnalyze(refused), undefined, refused.join(" "))
    // the split is the command's own
    assert.deepEqual(splitArguments(["x"], [], ["y", "task_balance"]), { databases: ["x", "y"], analyses: ["task_balance"] })
  })

  it("is taken over for the same databases and columns, with the progress so far; stopped for others", async () => {
    await startHeadStart(["analyze", "-d", trace])
    const seen: Array<number> = []
    const taken = await takeHeadStart([trace], columnsOfNames([...dasfAnalyses]), (p) => seen.push(p.events))
    assert.ok(taken !== undefined)
    taken.join() // as the load that takes it over does
    const decoded = await taken.decoded
    assert.equal(decoded.events, 50)
    assert.ok(seen.length >= 1 && seen.at(-1) === 50, `progress ${seen}`)
    assert.equal(await takeHeadStart([trace], columnsOfNames([...dasfAnalyses])), undefined, "taken once")

    await startHeadStart(["analyze", "-d", trace, "-a", "task_balance"])
    assert.equal(await takeHeadStart([trace], undefined), undefined, "other columns")
    await startHeadStart(["analyze", "-d", trace])
    assert.equal(await takeHeadStart([trace, trace], columnsOfNames([...dasfAnalyses])), undefined, "other databases")
    await startHeadStart(["analyze", "-d", join(dir, "missing.msgpack")])
    abortHeadStart()
    assert.equal(await takeHeadStart([join(dir, "missing.msgpack")], columnsOfNames([...dasfAnalyses])), undefined, "stopped")
  })
})
