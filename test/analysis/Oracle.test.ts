import assert from "node:assert/strict"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, it } from "node:test"
import type { Table } from "apache-arrow"
import * as A from "../../src/analysis/Analysis.ts"
import { decodeRecordsUnsafe } from "../../src/trace/TraceFormat.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"

const dasf = fileURLToPath(new URL("../fixtures/dasf-small/", import.meta.url))
const trace = join(dasf, "small-TracePlugin.msgpack")
const gpuRes = join(dasf, "small-ResourceMonitor-gpusurrogate.msgpack")
const plainRes = join(dasf, "small-ResourceMonitor.msgpack")

/** Minimal CSV reader (RFC 4180 quoting), rows as objects; drops pandas' index column. */
const readCsv = (path: string): Array<Record<string, string>> => {
  const text = readFileSync(path, "utf8")
  const rows: Array<Array<string>> = []
  let row: Array<string> = []
  let cell = ""
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]
    if (quoted) {
      if (ch === "\"" && text[i + 1] === "\"") (cell += "\"", i++)
      else if (ch === "\"") quoted = false
      else cell += ch
    } else if (ch === "\"") quoted = true
    else if (ch === ",") (row.push(cell), cell = "")
    else if (ch === "\n") (row.push(cell), rows.push(row), row = [], cell = "")
    else if (ch !== "\r") cell += ch
  }
  if (cell !== "" || row.length > 0) (row.push(cell), rows.push(row))
  const [header, ...body] = rows
  return body.map((r) => Object.fromEntries(header.map((h, j) => [h, r[j]]).filter(([h]) => h !== "")))
}

const rowsOf = (t: Table): Array<Record<string, unknown>> => t.toArray().map((r) => r.toJSON() as Record<string, unknown>)
const byKey = <R extends Record<string, unknown>>(rows: Array<R>, cols: Array<string>) =>
  new Map(rows.map((r) => [cols.map((c) => String(r[c])).join("|"), r]))
const close = (a: number, b: number, what: string) =>
  assert.ok(Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b)), `${what}: ${a} != ${b}`)

const events: Array<TraceEvent> = [
  ...decodeRecordsUnsafe(new Uint8Array(readFileSync(gpuRes))).events,
  ...decodeRecordsUnsafe(new Uint8Array(readFileSync(trace))).events
]
const computes = events.filter((e) => e.name === "Compute")
const samples = events.filter((e) => e.name === "Resource Usage")

describe("Oracle", async () => {
  const both = await A.loadPromise([gpuRes, trace])
  const traceOnly = await A.loadPromise([trace])
  const plain = await A.loadPromise([plainRes, trace])

  it("loads every DASF event into the three tables", () => {
    assert.deepStrictEqual(both.eventCounts, { "Resource Usage": 25, "Compute": 409, "Managed Memory": 558 })
    assert.equal(both.tasks.numRows, 409)
    assert.equal(both.memory.numRows, 558)
    assert.equal(both.resources.numRows, 25)
    assert.equal(both.fallbackRecords, 0)
  })

  for (const [label, tables, csv] of [
    ["gpusurrogate", () => both, "small-gpusurrogate-function_bottleneck.csv"],
    ["traceonly", () => traceOnly, "small-traceonly-function_bottleneck.csv"]
  ] as const) {
    it(`matches DASF's function bottleneck durations, percentages, counts and data sizes (${label})`, () => {
      const ours = byKey(rowsOf(A.perFunctionBottleneck(tables())), ["Host", "GPU", "Function"])
      const theirs = byKey(readCsv(join(dasf, csv)), ["Host", "GPU", "Function"])
      assert.deepStrictEqual([...ours.keys()].sort(), [...theirs.keys()].sort())
      for (const [k, d] of theirs) {
        const o = ours.get(k)!
        for (const c of ["Duration (s)", "Percentage of total time (%)", "Mean Task time (s)", "Mean Data Size (MB)"]) {
          close(o[c] as number, Number(d[c]), `${k} ${c}`)
        }
        assert.equal(o["Num Tasks (chunks)"], Number(d["Num Tasks (chunks)"]))
      }
    })
  }

  it("computes throughput per execution where DASF reuses a recomputed key's last duration", () => {
    const ours = rowsOf(A.perFunctionBottleneck(traceOnly))
    const theirs = byKey(readCsv(join(dasf, "small-traceonly-function_bottleneck.csv")), ["Host", "GPU", "Function"])
    const sizeOf = new Map<string, number>()
    for (const e of [...computes].sort((a, b) => a.timestamp - b.timestamp)) sizeOf.set(String(e.args.key), Number(e.args.size))
    const keyCount = new Map<string, number>()
    for (const e of computes) keyCount.set(String(e.args.key), (keyCount.get(String(e.args.key)) ?? 0) + 1)
    let differing = 0
    for (const o of ours) {
      const mine = computes.filter((e) =>
        e.process_id === o.Host && String(e.thread_id).endsWith(`-${o.GPU}`) && e.args.name === o.Function
      )
      const thr = mine.filter((e) => e.duration! > 0).map((e) =>
        (e.args.dependencies as Array<string>).reduce((s, d) => s + (sizeOf.get(d) ?? 0), 0) / e.duration!
      )
      close(o["Mean Throughput (MB/s)"] as number, thr.reduce((a, b) => a + b, 0) / thr.length / 1e6, `${o.Function}`)
      const dasfRow = theirs.get(`${o.Host}|${o.GPU}|${o.Function}`)!
      const recomputed = mine.some((e) => keyCount.get(String(e.args.key))! > 1)
      if (!recomputed) close(o["Mean Throughput (MB/s)"] as number, Number(dasfRow["Mean Throughput (MB/s)"]), "same as DASF")
      else if (Math.abs((o["Mean Throughput (MB/s)"] as number) - Number(dasfRow["Mean Throughput (MB/s)"])) > 1e-9) {
        differing++
      }
    }
    assert.ok(differing > 0, "the recomputed-key functions differ from DASF")
  })

  it("attributes GPU samples to the tasks running on the sample's host ([end - duration, end])", () => {
    const ours = rowsOf(A.perFunctionBottleneck(both))
    for (const o of ours) {
      const mine = computes.filter((e) =>
        e.process_id === o.Host && String(e.thread_id).endsWith(`-${o.GPU}`) && e.args.name === o.Function
      )
      const vals: Array<number> = []
      for (const s of samples) {
        for (const e of mine) {
          if (s.process_id === e.process_id && e.timestamp - e.duration! <= s.timestamp && s.timestamp <= e.timestamp) {
            vals.push(Number(s.args.gpu_utilization))
          }
        }
      }
      if (vals.length === 0) assert.equal(o["Mean GPU Utilization (%)"], null)
      else close(o["Mean GPU Utilization (%)"] as number, vals.reduce((a, b) => a + b, 0) / vals.length, `${o.Function}`)
    }
    // DASF pools samples per function name, so both workers' `sum` rows show the same value; ours differ
    const sums = ours.filter((o) => o.Function === "sum")
    assert.notEqual(sums[0]["Mean GPU Utilization (%)"], sums[1]["Mean GPU Utilization (%)"])
  })

  it("leaves GPU columns null, without crashing, on a trace recorded without a GPU", () => {
    const rows = rowsOf(A.perFunctionBottleneck(plain))
    assert.ok(rows.length > 0)
    for (const r of rows) {
      assert.equal(r["Mean GPU Utilization (%)"], null)
      assert.equal(r["Mean GPU Memory Used (GB)"], null)
    }
    assert.ok(rowsOf(A.perTaskBottleneck(plain)).length > 0)
  })

  it("matches DASF's task bottleneck as a row set keyed by (Host, GPU, Task Key)", () => {
    for (const csv of ["small-traceonly-task_bottleneck.csv", "small-gpusurrogate-task_bottleneck.csv"]) {
      const ours = byKey(rowsOf(A.perTaskBottleneck(both)), ["Host", "GPU", "Task Key"])
      const theirs = byKey(readCsv(join(dasf, csv)), ["Host", "GPU", "Task Key"])
      assert.equal(ours.size, 385)
      assert.deepStrictEqual([...ours.keys()].sort(), [...theirs.keys()].sort())
      for (const [k, d] of theirs) {
        const o = ours.get(k)!
        for (const c of ["Duration (s)", "Percentage of total time (%)", "Memory usage (Mb)"]) {
          close(o[c] as number, Number(d[c]), `${k} ${c}`)
        }
      }
    }
  })

  it("sorts bottleneck rows by duration descending with deterministic ties", () => {
    const rows = rowsOf(A.perTaskBottleneck(both))
    for (let i = 1; i < rows.length; i++) {
      const a = rows[i - 1]
      const b = rows[i]
      assert.ok((a["Duration (s)"] as number) >= (b["Duration (s)"] as number))
    }
    assert.deepStrictEqual(rowsOf(A.perTaskBottleneck(both)), rowsOf(A.perTaskBottleneck(both)))
  })

  it("buckets task balance from the trace start with the mean chunk count per second", () => {
    const table = A.perWorkerTaskBalance(both)
    const theirs = readCsv(join(dasf, "small-gpusurrogate-task_balance.csv"))
    assert.deepStrictEqual(table.schema.fields.map((f) => f.name), Object.keys(theirs[0]))
    const mem = events.filter((e) => e.name === "Managed Memory")
    const t0 = Math.min(...events.map((e) => e.timestamp - (e.duration ?? 0)))
    const t1 = Math.max(...events.map((e) => e.timestamp))
    const rows = rowsOf(table)
    assert.equal(rows.length, Math.floor(t1 - t0) + 1)
    for (const r of rows) {
      const b = r["Time Interval (seconds from begin)"] as number
      for (const w of ["worker-vm-0", "worker-vm-1"]) {
        const inBucket = mem.filter((e) => e.thread_id === w && Math.floor(e.timestamp - t0) === b)
        const mean = inBucket.reduce((s, e) => s + Number(e.args.tasks), 0) / inBucket.length
        close(r[w] as number, mean, `${w} @${b}`)
      }
    }
  })

  it("rebuilds the dependency graph for the critical path and reports shares summing to 100", () => {
    const rows = rowsOf(A.criticalPath(both))
    assert.ok(rows.length > 1)
    const total = rows.reduce((s, r) => s + (r["Share of path (%)"] as number), 0)
    close(total, 100, "shares")
  })
})
