import assert from "node:assert/strict"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, it } from "node:test"
import { encode } from "@msgpack/msgpack"
import * as fc from "fast-check"
import * as A from "../../src/analysis/Analysis.ts"
import { analyzePromise } from "../../src/analysis/Analyze.ts"
import { splitArguments } from "../../src/cli/commands/analyze.ts"
import { encodeRecords, isTraceFormatError } from "../../src/trace/TraceFormat.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"

const dasf = fileURLToPath(new URL("../fixtures/dasf-small/", import.meta.url))
const trace = join(dasf, "small-TracePlugin.msgpack")
const tmp = () => mkdtempSync(join(tmpdir(), "tessera-analysis-"))

const compute = (key: string, extra: Record<string, unknown> = {}): TraceEvent => ({
  name: "Compute",
  timestamp: 10,
  phase: "X",
  process_id: "h",
  thread_id: "worker-h-0",
  args: { key, state: "memory", size: 8, dependencies: [], dependents: [], ...extra },
  duration: 1
})

describe("FunctionName", () => {
  it("names every key shape the way dask's key_split does", () => {
    assert.equal(A.functionName("('sum-c79b99cd0615d60ce01b37f961c46f12', 3, 0)"), "sum")
    assert.equal(A.functionName("('var-partial-f25c4ad77b800e93fac4f5e341cf3340', 5, 0)"), "var-partial")
    assert.equal(A.functionName("finalize-c79b99cd0615d60ce01b37f961c46f12"), "finalize")
    assert.equal(A.functionName("original-array-c79b99cd0615d60ce01b37f961c46f12"), "original-array")
    assert.equal(A.functionName("x"), "x")
    assert.equal(A.functionName("('x-abc123', 0, 1)"), "x")
    assert.equal(A.functionName("c79b99cd0615d60ce01b37f961c46f12"), "data")
  })

  it("differs from DASF's derivation exactly on the keys DASF-NOTES 8 lists", () => {
    assert.equal(A.dasfFunctionName("finalize-c79b99cd0615d60ce01b37f961c46f12"), "nalize")
    assert.equal(A.dasfFunctionName("original-array-c79b99cd0615d60ce01b37f961c46f12"), "iginal-array")
    assert.equal(A.dasfFunctionName("x"), "")
    fc.assert(
      fc.property(fc.constantFrom("sum", "mean_chunk", "var-partial"), fc.nat(), fc.nat(), (f, i, j) => {
        const key = `('${f}-0123456789abcdef0123456789abcdef', ${i}, ${j})`
        assert.equal(A.functionName(key), A.dasfFunctionName(key))
      }),
      { numRuns: 50 }
    )
  })

  it("uses the key's function name when a Compute event has no args.name", () => {
    const t = A.loadBytesUnsafe([{ file: "x", bytes: encodeRecords([compute("finalize-0123456789abcdef0123456789abcdef")]) }])
    assert.equal(t.tasks.getChild("function")!.get(0), "finalize")
  })
})

describe("Load", () => {
  it("loads databases in any order to the same tables", async () => {
    const a = await A.loadPromise([join(dasf, "small-ResourceMonitor.msgpack"), trace])
    const b = await A.loadPromise([trace, join(dasf, "small-ResourceMonitor.msgpack")])
    const rows = (t: A.TraceTables) => A.toCsv(A.perFunctionBottleneck(t)) + A.toCsv(A.perWorkerTaskBalance(t))
    assert.equal(rows(a), rows(b))
  })

  it("streams in small chunks to the same tables as one big read", async () => {
    const a = await A.loadPromise([trace])
    const b = await A.loadPromise([trace], { chunkBytes: 1024 })
    assert.equal(A.toCsv(a.tasks), A.toCsv(b.tasks))
    assert.equal(A.toCsv(a.memory), A.toCsv(b.memory))
  })

  it("decodes unusual record shapes through the generic fallback", () => {
    const odd = [
      // args key order reversed, integer timestamp, ext-free but map16 header via many args
      { args: { tasks: 3, size: 24, state: "memory", key: "k" }, thread_id: "worker-h-0", process_id: "h", phase: "I", timestamp: 5, name: "Managed Memory" },
      compute("('a-0123456789abcdef0123456789abcdef', 0)", { dependencies: "not a list" })
    ]
    const bytes = new Uint8Array(Buffer.concat(odd.map((o) => {
      const body = encode(o)
      const h = Buffer.alloc(8)
      h.writeBigUInt64BE(BigInt(body.length))
      return Buffer.concat([h, body])
    })))
    const t = A.loadBytesUnsafe([{ file: "odd", bytes }])
    assert.equal(t.memory.numRows, 1)
    assert.equal(t.memory.getChild("tasks")!.get(0), 3)
    assert.equal(t.tasks.numRows, 1)
    assert.ok(t.fallbackRecords >= 1)
  })

  it("keeps metadata events whole (Pipeline Graph as I or M), on one thread and on workers", async () => {
    const graph = (phase: "I" | "M", dot: string): TraceEvent => ({
      name: "Pipeline Graph", timestamp: 1, phase, process_id: "h", thread_id: null, args: { dot }
    })
    const events = [graph("I", "digraph { a -> b }"), compute("a-1"), graph("M", "digraph { old }"), compute("b-2")]
    const dir = tmp()
    try {
      const file = join(dir, "graph.msgpack")
      writeFileSync(file, encodeRecords(events))
      for (const threads of [1, 2]) {
        const t = await A.loadPromise([file], { threads, chunkBytes: 1024 })
        assert.deepEqual(t.metadata.map((e) => [e.phase, e.args.dot]), [["I", "digraph { a -> b }"], ["M", "digraph { old }"]])
        assert.equal(t.tasks.numRows, 2)
        assert.equal(t.eventCounts["Pipeline Graph"], 2)
        assert.equal(t.fallbackRecords, 0)
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("gives task keys, dependency keys and memory keys one dictionary whose codes compare as their strings do (property)", () => {
    // keys that are also hosts, workers, function names or states: one pool holds them all
    const text = fc.constantFrom("h", "worker-h-0", "memory", "k", "('f-1', 0)", "a,b", "ключ", "")
    const memory = (key: string | undefined): TraceEvent => ({
      name: "Managed Memory", timestamp: 11, phase: "I", process_id: "h", thread_id: "worker-h-0",
      args: { ...(key !== undefined ? { key } : {}), state: "memory", size: 8, tasks: 1 }
    })
    fc.assert(
      fc.property(
        fc.array(fc.record({ key: text, deps: fc.array(text, { maxLength: 3 }) }), { minLength: 1, maxLength: 12 }),
        fc.array(fc.option(text, { nil: undefined }), { maxLength: 6 }),
        (tasks, memKeys) => {
          const events = [...tasks.map((t) => compute(t.key, { dependencies: t.deps })), ...memKeys.map(memory)]
          const t = A.loadBytesUnsafe([{ file: "keys", bytes: encodeRecords(events) }])
          const keyCol = t.tasks.getChild("key")!
          const deps = t.tasks.getChild("dependencies")!
          const memKey = t.memory.getChild("key")!
          // every row reads its own strings, a missing key null
          assert.deepEqual(keyCol.toArray(), tasks.map((x) => x.key))
          assert.deepEqual(Array.from({ length: tasks.length }, (_, i) => Array.from(deps.get(i)!)), tasks.map((x) => x.deps))
          assert.deepEqual(Array.from({ length: memKeys.length }, (_, i) => memKey.get(i)), memKeys.map((k) => k ?? null))
          // one dictionary: a code is a string, wherever it appears
          const dict = keyCol.data[0]!.dictionary!
          assert.equal(deps.data[0]!.children[0]!.dictionary, dict)
          assert.equal(memKey.data[0]!.dictionary, dict)
          const codeOf = new Map<string, number>()
          const see = (s: string, code: number) => {
            assert.equal(dict.get(code), s)
            assert.equal(codeOf.get(s) ?? code, code, `one code for ${JSON.stringify(s)}`)
            codeOf.set(s, code)
          }
          const codes = (d: { readonly values: unknown }) => d.values as Int32Array
          tasks.forEach((x, i) => see(x.key, codes(keyCol.data[0]!)[i]!))
          tasks.flatMap((x) => x.deps).forEach((d, j) => see(d, codes(deps.data[0]!.children[0]!)[j]!))
          memKeys.forEach((k, i) => (k === undefined ? assert.equal(memKey.isValid(i), false) : see(k, codes(memKey.data[0]!)[i]!)))
        }
      )
    )
  })

  it("reports dropped bytes of a truncated tail and keeps the whole records", () => {
    const bytes = new Uint8Array(readFileSync(trace))
    const t = A.loadBytesUnsafe([{ file: "cut", bytes: bytes.subarray(0, bytes.length - 10) }])
    assert.equal(t.events, 966)
    assert.ok(t.droppedBytes > 0)
  })

  it("fails with a TraceFormatError naming a missing database, and does not create it", async () => {
    const dir = tmp()
    try {
      const missing = join(dir, "nope.msgpack")
      await assert.rejects(A.loadPromise([trace, missing]), (e: unknown) => {
        assert.ok(isTraceFormatError(e))
        assert.equal(e.file, missing)
        assert.equal(e.reason._tag, "FileNotFound")
        return true
      })
      assert.equal(existsSync(missing), false)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("fails with a TraceFormatError naming a corrupt database", async () => {
    const dir = tmp()
    try {
      const bad = join(dir, "bad.msgpack")
      writeFileSync(bad, "this is not a trace database\n")
      await assert.rejects(A.loadPromise([bad]), (e: unknown) => {
        assert.ok(isTraceFormatError(e))
        assert.match(e.message, /bad\.msgpack/)
        return true
      })
      const notEvent = join(dir, "map.msgpack")
      const body = encode({ hello: 1 })
      const h = Buffer.alloc(8)
      h.writeBigUInt64BE(BigInt(body.length))
      writeFileSync(notEvent, Buffer.concat([h, body]))
      await assert.rejects(A.loadPromise([notEvent]), (e: unknown) => isTraceFormatError(e) && e.reason._tag === "NotAnEvent")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("analyze command", () => {
  it("splits DASF-style arguments into databases and analyses", () => {
    assert.deepStrictEqual(splitArguments(["a.msgpack"], ["task_balance"], ["b.msgpack", "critical_path"]), {
      databases: ["a.msgpack", "b.msgpack"],
      analyses: ["task_balance", "critical_path"]
    })
    assert.deepStrictEqual(splitArguments(["a"], [], []).analyses, ["function_bottleneck", "task_bottleneck", "task_balance"])
  })

  it("writes DASF's CSV files and Arrow IPC files into the output directory", async () => {
    const dir = tmp()
    try {
      const printed: Array<string> = []
      await analyzePromise({
        databases: [trace],
        analyses: ["function_bottleneck", "task_bottleneck", "task_balance", "function_summary"],
        output: dir,
        head: 5,
        format: "arrow",
        print: (s) => printed.push(s)
      })
      for (const n of ["function_bottleneck", "task_bottleneck", "task_balance", "function_summary"]) {
        assert.ok(existsSync(join(dir, `${n}.csv`)))
        assert.ok(existsSync(join(dir, `${n}.arrow`)))
      }
      const csv = readFileSync(join(dir, "task_bottleneck.csv"), "utf8").split("\n")
      assert.equal(csv[0], "Host,GPU,Task Key,Duration (s),Percentage of total time (%),Memory usage (Mb)")
      assert.equal(csv.length, 385 + 2)
      const text = printed.join("\n")
      assert.match(text, /====================Function bottleneck====================/)
      assert.match(text, /Host\s+GPU\s+Function\s+Duration \(s\)/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("rejects an unknown analysis naming the valid ones", async () => {
    await assert.rejects(
      analyzePromise({ databases: [trace], analyses: ["bogus"], head: 5, format: "csv", print: () => undefined }),
      /unknown analysis bogus; valid: function_bottleneck/
    )
  })
})
