import assert from "node:assert/strict"
import { writeFile, mkdtemp } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import fc from "fast-check"
import { coresMinWall, histogram, taskHistograms } from "../../src/analysis/Histograms.ts"
import { resourceSpecs } from "../../src/report/Charts.ts"
import { memorySampleIndices, renderHtml } from "../../src/report/Html.ts"
import { decodeEventsUnsafe, loadEvents, ReportInputError } from "../../src/report/LoadEvents.ts"
import { fromEvents, functionOfKey } from "../../src/report/ReportData.ts"
import { defaultTables } from "../../src/report/ReportTables.ts"
import { fromTables } from "../../src/report/FromTables.ts"
import { loadBytesUnsafe, loadPromise } from "../../src/analysis/Load.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"

const data = fileURLToPath(new URL("../fixtures/dasf-small/", import.meta.url))

describe("ReportData", () => {
  it("folds dasf-small into tasks, memory and resource columns on one time axis", async () => {
    const { events } = await loadEvents([join(data, "small-TracePlugin.msgpack"), join(data, "small-ResourceMonitor.msgpack")])
    const d = fromEvents(events)
    assert.equal(d.tasks.start.length, 409)
    assert.equal(d.memory.time.length, 558)
    assert.equal(d.resources.time.length, 25)
    assert.deepEqual(d.workers, ["worker-vm-0", "worker-vm-1"])
    assert.deepEqual(d.hosts, ["vm"])
    assert.equal(d.resources.values["gpu_utilization"], undefined)
    for (let i = 0; i < 409; i++) {
      assert.ok(d.tasks.start[i]! >= 0 && d.tasks.end[i]! <= d.wall + 1e-9 && d.tasks.start[i]! <= d.tasks.end[i]!)
    }
    const tables = defaultTables(d)
    assert.equal(tables[0]!.rows.reduce((s, r) => s + (r[1] as number), 0), 409)
  })

  it("derives function names from dask keys", () => {
    assert.equal(functionOfKey("('mean_chunk-0117baf52de50432ed73e4bf713a01f5', 0, 1)"), "mean_chunk")
    assert.equal(functionOfKey("('sum-aggregate-c79b99cd0615d60ce01b37f961c46f12', 3)"), "sum-aggregate")
    assert.equal(functionOfKey("load-3"), "load")
  })

  // values that break naive floating-point binning: denormals, ±0, the largest doubles
  // (their range overflows), values one ulp apart, infinities and NaN (never counted)
  const awkward = fc.constantFrom(5e-324, -5e-324, 0, -0, 2.2250738585072014e-308, Number.MAX_VALUE, -Number.MAX_VALUE, 1e308, -1e308,
    0.1, 0.30000000000000004, -40.00000000000001, -40, 1 + 2 ** -52, 1, Infinity, -Infinity, NaN)
  const value = fc.oneof(fc.double(), fc.double({ min: -1e6, max: 1e6, noNaN: true }), fc.integer({ min: -5, max: 5 }), awkward)
  const inBin = (b: { x0: number; x1: number }, last: boolean, v: number) => b.x0 <= v && (v < b.x1 || (last && v === b.x1))

  it("counts every finite value in exactly one bin, including denormals, -0, huge ranges and equal values", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.array(value, { maxLength: 200 }), fc.tuple(value, fc.integer({ min: 1, max: 30 })).map(([v, k]) => Array<number>(k).fill(v))),
        (xs) => {
          const h = histogram("x", "x", "u", xs)
          const finite = xs.filter(Number.isFinite)
          assert.equal(h.n, finite.length)
          assert.equal(h.bins.reduce((s, b) => s + b.count, 0), finite.length)
          for (let k = 0; k < h.bins.length; k++) {
            const b = h.bins[k]!
            assert.ok(Number.isFinite(b.x0) && Number.isFinite(b.x1) && b.x0 < b.x1, `bin ${k} [${b.x0}, ${b.x1}]`)
            if (k > 0) assert.equal(b.x0, h.bins[k - 1]!.x1, "bins share their edges")
            const last = k === h.bins.length - 1
            assert.equal(b.count, finite.filter((v) => inBin(b, last, v)).length, `count of bin ${k} [${b.x0}, ${b.x1}]`)
          }
          for (const v of finite) assert.equal(h.bins.filter((b, k) => inBin(b, k === h.bins.length - 1, v)).length, 1, `${v} in one bin`)
          assert.ok(h.bins.length <= 42, `${h.bins.length} bins`)
        }
      ),
      { numRuns: 100 }
    )
  })

  it("bins the counterexamples that once fell outside every bin", () => {
    for (const xs of [[5e-324, -40.00000000000001], [Number.MAX_VALUE, -Number.MAX_VALUE], [-0, 0, 5e-324], [7, 7, 7]]) {
      const h = histogram("x", "x", "u", xs)
      assert.equal(h.bins.reduce((s, b) => s + b.count, 0), xs.length, JSON.stringify(xs))
      for (const v of xs) assert.equal(h.bins.filter((b, k) => inBin(b, k === h.bins.length - 1, v)).length, 1, `${v} of ${JSON.stringify(xs)}`)
    }
  })

  it("reports cores only where the trace has cpu_time", () => {
    const d = fromEvents([
      { name: "Compute", timestamp: 2, duration: 1, phase: "X", process_id: "h", thread_id: "w0", args: { key: "a-1", cpu_time: 0.5, size: 8 } }
    ])
    const cores = taskHistograms(d, ["cores"])[0]!
    assert.equal(cores.n, 1)
    assert.ok(cores.bins.some((b) => b.count === 1 && b.x0 <= 0.5 && 0.5 <= b.x1))
  })

  it("leaves tasks shorter than coresMinWall out of the cores histogram (tick-granular CPU time)", () => {
    const d = fromEvents([
      { name: "Compute", timestamp: 2, duration: 1, phase: "X", process_id: "h", thread_id: "w0", args: { key: "a-1", cpu_time: 0.5, size: 8 } },
      // 0.2 ms task that caught one 4 ms tick: 20 "cores", which is the tick, not the task
      { name: "Compute", timestamp: 3, duration: 0.0002, phase: "X", process_id: "h", thread_id: "w0", args: { key: "a-2", cpu_time: 0.004, size: 8 } }
    ])
    const cores = taskHistograms(d, ["cores"])[0]!
    assert.equal(cores.n, 1)
    assert.ok(cores.bins.every((b) => b.x1 <= 1), "no bin reaches the short task's 20 cores")
    assert.ok(cores.title.includes(`${coresMinWall * 1000} ms`))
  })

  it("inlines everything: no external URLs, no closing script tag inside data", async () => {
    const d = fromEvents([
      { name: "Compute", timestamp: 2, duration: 1, phase: "X", process_id: "h", thread_id: "w0", args: { key: "</script><b>", name: "f" } },
      { name: "Graph", timestamp: 0, phase: "M", process_id: "h", thread_id: null, args: { dot: "digraph { load -> normalize -> kmeans }" } }
    ])
    const html = await renderHtml(d)
    assert.ok(!/<(script|link|img)[^>]+(src|href)=["']?https?:/i.test(html))
    assert.equal(html.split("</script>").length - 1, html.split("<script").length - 1)
    assert.ok(html.includes("<svg"), "the stage DAG is drawn as inline SVG")
  })

  it("draws resource metrics that vary and lists the constant ones with their value", async () => {
    const sample = (t: number, cpu: number): TraceEvent => ({
      name: "Resource Usage", timestamp: t, phase: "I", process_id: "h", thread_id: null,
      args: { cpu, memory: 2 ** 30, gpu_utilization: 0, gpu_memory_used: 0 }
    })
    const d = fromEvents([sample(3, 50), sample(1, 10), sample(2, 90)])
    const r = resourceSpecs(d)
    assert.deepEqual(r.charts.map((c) => c.field), ["cpu"])
    assert.deepEqual(r.constant.map((c) => `${c.field}=${c.value}`), ["memory=1 GiB", "gpu_utilization=0 %", "gpu_memory_used=0 B"])
    const html = await renderHtml(d)
    assert.ok(html.includes("constant over the whole run (not drawn): Memory 1 GiB · GPU utilisation 0 % · GPU memory 0 B"))
    // the page finds a window's samples by binary search: resource times are sorted
    const payload = JSON.parse(/<script id="tessera-data" type="application\/json">([^]*?)<\/script>/.exec(html)![1]!)
    assert.deepEqual(payload.resources.t, [0, 1, 2])
    assert.deepEqual(payload.resources.cols.cpu, [10, 90, 50])
  })

  it("keeps Managed Memory samples in time order for the page", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.double({ min: 0, max: 100, noNaN: true }), fc.integer({ min: 0, max: 3 })), { maxLength: 60 }), (samples) => {
        const d = fromEvents(samples.map(([t, w]) => ({ name: "Managed Memory", timestamp: t, phase: "I", process_id: "h", thread_id: `w${w}`, args: { size: 1, tasks: 1 } })))
        const idx = memorySampleIndices(d)
        assert.equal(idx.length, samples.length)
        for (let i = 1; i < idx.length; i++) assert.ok(d.memory.time[idx[i - 1]!]! <= d.memory.time[idx[i]!]!)
      }),
      { numRuns: 50 }
    )
  })

  it("fails with the file and byte offset on a record that is not a trace event", async () => {
    const bad = new Uint8Array([0, 0, 0, 0, 0, 0, 0, 1, 0xc0])
    assert.throws(() => decodeEventsUnsafe(bad, "bad.msgpack"), (e: unknown) => e instanceof ReportInputError && e.offset === 0 && e.message.includes("bad.msgpack"))
    const dir = await mkdtemp(join(tmpdir(), "tessera-report-"))
    await writeFile(join(dir, "bad.msgpack"), bad)
    await assert.rejects(loadEvents([join(dir, "bad.msgpack")]), ReportInputError)
    await assert.rejects(loadEvents([join(dir, "missing.msgpack")]), /FileNotFound|NotReadable/)
  })

  it("recovers whole records before a truncated tail and counts the dropped bytes", async () => {
    const { readFile } = await import("node:fs/promises")
    const bytes = await readFile(join(data, "small-ResourceMonitor.msgpack"))
    const r = decodeEventsUnsafe(bytes.subarray(0, bytes.length - 10), "x")
    assert.equal(r.events.length, 24)
    assert.ok(r.droppedBytes > 0)
  })
})

describe("fromTables", () => {
  it("builds the same report model from the analysis tables as from the events", async () => {
    const files = [join(data, "small-TracePlugin.msgpack"), join(data, "small-ResourceMonitor.msgpack")]
    const a = fromEvents((await loadEvents(files)).events)
    const b = fromTables(await loadPromise(files))
    assert.equal(b.tasks.start.length, a.tasks.start.length)
    assert.deepEqual([...b.workers].sort(), [...a.workers].sort())
    assert.deepEqual([...b.functions].sort(), [...a.functions].sort())
    assert.ok(Math.abs(a.t0 - b.t0) < 1e-9 && Math.abs(a.wall - b.wall) < 1e-9)
    const sig = (d: typeof a) => Array.from(d.tasks.start, (s, i) => `${d.tasks.key[i]}|${d.workers[d.tasks.worker[i]!]}|${d.functions[d.tasks.fn[i]!]}|${s.toFixed(9)}|${d.tasks.size[i]}`).sort()
    assert.deepEqual(sig(b), sig(a))
    assert.deepEqual(Object.keys(b.resources.values).sort(), Object.keys(a.resources.values).sort())
    assert.equal(b.memory.time.length, a.memory.time.length)
  })

  it("builds the same transfers, clock offsets, device bytes and GPU workers from the tables as from the events", () => {
    const events: Array<TraceEvent> = [
      { name: "Compute", timestamp: 2, phase: "X", process_id: "h", thread_id: "worker-h-0", duration: 1, args: { key: "('a', 0)", state: "memory", size: 8 } },
      { name: "Compute", timestamp: 3, phase: "X", process_id: "h", thread_id: "worker-h-2", duration: 1, args: { key: "('b', 0)", state: "memory", size: 8, dependencies: ["('a', 0)"] } },
      { name: "Managed Memory", timestamp: 3, phase: "I", scope: "g", process_id: "h", thread_id: "worker-h-2", args: { key: "('b', 0)", state: "memory", size: 8, tasks: 1, device: 64 } },
      { name: "Managed Memory", timestamp: 2, phase: "I", scope: "g", process_id: "h", thread_id: "worker-h-0", args: { key: "('a', 0)", state: "memory", size: 8, tasks: 1 } },
      { name: "Transfer", timestamp: 2.5, phase: "X", process_id: "h", thread_id: "worker-h-2", duration: 0.25, args: { keys: ["('a', 0)"], bytes: 8, worker: "worker-h-2", start: 2.25, stop: 2.5, direction: "host-to-device" } },
      { name: "Transfer", timestamp: 2.2, phase: "X", process_id: "h", thread_id: "worker-h-16", duration: 0.1, args: { keys: ["('a', 0)", "('c', 1)"], bytes: 80, worker: "worker-h-16", peer: "worker-h-0", start: 2.1, stop: 2.2, serialize: 0.01, deserialize: 0.02 } },
      { name: "Clock Offset", timestamp: 1, phase: "I", scope: "t", process_id: "h", thread_id: "worker-h-16", args: { worker: "tessera-worker@h:1", offset: 0.5, uncertainty: 0.01 } },
      { name: "Clock Offset", timestamp: 2, phase: "I", scope: "t", process_id: "h", thread_id: "worker-h-16", args: { worker: "tessera-worker@h:1", offset: 0.25, uncertainty: 0.02 } }
    ]
    const a = fromEvents(events)
    const b = fromTables(loadBytesUnsafe([{ file: "t.msgpack", bytes: encodeRecords(events) }]))
    const transfers = (d: typeof a) => Array.from(d.transfers.start, (s, i) =>
      [s, d.transfers.end[i], d.workers[d.transfers.worker[i]!], d.transfers.peer[i], d.transfers.direction[i], d.transfers.keys[i], d.transfers.nKeys[i], d.transfers.bytes[i]])
    assert.deepEqual(transfers(b), transfers(a))
    assert.deepEqual(transfers(a).map((r) => r[4]), ["peer", "host-to-device"])
    assert.deepEqual(b.clocks, a.clocks)
    assert.deepEqual(a.clocks, [{ worker: "worker-h-16", name: "tessera-worker@h:1", samples: 2, offset: 0.25, uncertainty: 0.02, minOffset: 0.25, maxOffset: 0.5 }])
    // bytes in: b reads a's 8 bytes, from either model
    const bytesIn = (d: typeof a) => Object.fromEntries(Array.from(d.tasks.bytesIn, (x, i) => [d.tasks.key[i], x]))
    assert.deepEqual(bytesIn(b), bytesIn(a))
    assert.deepEqual(bytesIn(a), { "('a', 0)": 0, "('b', 0)": 8 })
    assert.deepEqual(b.gpuWorkers, ["worker-h-2"])
    assert.deepEqual(a.gpuWorkers, b.gpuWorkers)
    const device = (d: typeof a) => Array.from(d.memory.device, (x, i) => `${d.workers[d.memory.worker[i]!]}=${x}`).sort()
    assert.deepEqual(device(b), device(a))
    assert.deepEqual(device(a), ["worker-h-0=NaN", "worker-h-2=64"])
  })

  it("keeps every host's resource timeline when several hosts' files load together", async () => {
    const dir = await mkdtemp(join(tmpdir(), "tessera-hosts-"))
    const files = await Promise.all(["alpha", "beta"].map(async (host, h) => {
      const file = join(dir, `run-ResourceMonitor-${host}.msgpack`)
      await writeFile(file, encodeRecords([0, 1, 2].map((t): TraceEvent => ({
        name: "Resource Usage", timestamp: 1e9 + t, phase: "I", scope: "g", process_id: host, thread_id: null,
        args: { cpu: 10 * (h + 1) + t, memory: 1e9 + t, time: 1e9 + t, num_fds: 4 }
      }))))
      return file
    }))
    const d = fromTables(await loadPromise(files))
    assert.deepEqual([...d.hosts].sort(), ["alpha", "beta"])
    const spec = resourceSpecs(d).charts.find((c) => c.field === "cpu")!.spec as { encoding: { color: { scale: { domain: Array<string> } } } }
    assert.deepEqual(spec.encoding.color.scale.domain, ["alpha", "beta"])
    const perHost = new Map<string, Array<number>>()
    d.resources.host.forEach((h, i) => perHost.set(d.hosts[h]!, [...perHost.get(d.hosts[h]!) ?? [], d.resources.values.cpu![i]!]))
    assert.deepEqual(perHost.get("alpha"), [10, 11, 12])
    assert.deepEqual(perHost.get("beta"), [20, 21, 22])
  })
})
