import { loadPromise } from "./src/analysis/Load.ts"
const t = await loadPromise(["/tmp/tr/g/demo-TracePlugin-vm.msgpack"])
const tasks = t.tasks.toArray()
let shown = 0
for (const r of t.transfers) {
  if (r.direction !== "host-to-device") continue
  const k = r.keys.toArray()[0]
  const takers = tasks.filter((x) => x.dependencies.toArray().includes(k))
  const maker = tasks.filter((x) => x.key === k)
  if (shown++ < 4) console.log(k, r.start, r.stop, r.worker, "makers", maker.map((x) => [x.worker, x.end]), "takers", takers.map((x) => [x.key, x.worker, x.start, x.end]))
}
