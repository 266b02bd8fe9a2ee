/**
 * The one-way flow between layers (DESIGN.md), checked on the imports of every source
 * file: dsl does no I/O; engine never imports profiler; analysis never imports engine;
 * profiler never imports analysis (or report); analysis never imports report;
 * trace imports no other layer; nobody imports another layer's internal/. One leaf
 * module, trace/KeySplit.ts (the key -> function name rule, which imports nothing), may
 * be imported by every layer: the engine names tasks with it, so the engine, the trace
 * writer and the analysis agree.
 */
import assert from "node:assert/strict"
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"

const src = fileURLToPath(new URL("../src/", import.meta.url))

const files = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : []
  )

/** Import specifiers of a file, static and dynamic. */
const imports = (file: string): Array<string> =>
  [...readFileSync(file, "utf8").matchAll(/(?:^|\n)\s*(?:import|export)[^"'`;]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g)].map(
    (m) => m[1] ?? m[2]!
  )

/** The layer a relative import lands in, from a file inside src/<layer>/. */
const layerOf = (file: string, spec: string): string | undefined => {
  if (!spec.startsWith(".")) return undefined
  const target = relative(src, join(file, "..", spec))
  return target.startsWith("..") ? undefined : target.split("/")[0]
}

const rules: Record<string, { readonly layers: ReadonlyArray<string>; readonly nodeBuiltins: boolean }> = {
  // charts is neutral rendering; the DSL draws its stage DAG with report/Graphviz.ts,
  // which is pure computation (no node: imports, checked below).
  dsl: { layers: ["dsl", "engine", "kernels", "charts"], nodeBuiltins: false },
  engine: { layers: ["engine"], nodeBuiltins: true },
  kernels: { layers: ["kernels", "engine"], nodeBuiltins: true },
  trace: { layers: ["trace"], nodeBuiltins: true },
  profiler: { layers: ["profiler", "engine", "trace", "charts"], nodeBuiltins: true },
  // Reports and figures are views of the analysis tables (DESIGN.md puts them in the
  // analysis layer); src/report is that part of it.
  charts: { layers: [], nodeBuiltins: true },
  analysis: { layers: ["analysis", "trace", "charts"], nodeBuiltins: true },
  report: { layers: ["report", "analysis", "trace", "charts"], nodeBuiltins: true }
}

/** Modules any layer may import; they import nothing (checked below). */
const leaves = new Set(["trace/KeySplit.ts"])

/** charts modules that do no I/O, usable from layers that must not (checked below). */
const pure = new Set(["report/Graphviz.ts"])

describe("Layers", () => {
  it("every import follows the one-way flow between layers", () => {
    const broken: Array<string> = []
    for (const file of files(src)) {
      const layer = relative(src, file).split("/")[0]!
      const rule = rules[layer]
      if (rule === undefined) continue
      for (const spec of imports(file)) {
        const target = layerOf(file, spec)
        if (leaves.has(relative(src, join(file, "..", spec)))) continue
        if (target !== undefined && !rule.layers.includes(target)) broken.push(`${relative(src, file)} imports ${spec} (${target})`)
        if (!rule.nodeBuiltins && spec.startsWith("node:")) broken.push(`${relative(src, file)} imports ${spec} (no I/O in ${layer})`)
        if (!rule.nodeBuiltins && target === "charts" && !pure.has(relative(src, join(file, "..", spec)))) {
          broken.push(`${relative(src, file)} imports ${spec} (only pure charts modules in ${layer})`)
        }
      }
    }
    assert.deepEqual(broken, [])
  })

  it("no module imports another layer's internal/ modules", () => {
    // the report's column access is still analysis-internal; it moves with the report
    const pending = new Set(["report/FromTables.ts imports ../analysis/internal/access.ts"])
    const broken: Array<string> = []
    for (const file of files(src)) {
      const from = relative(src, file)
      for (const spec of imports(file)) {
        const target = layerOf(file, spec)
        if (target === undefined || target === from.split("/")[0]) continue
        const path = relative(src, join(file, "..", spec))
        if (path.split("/")[1] === "internal" && !pending.has(`${from} imports ${spec}`)) broken.push(`${from} imports ${spec}`)
      }
    }
    assert.deepEqual(broken, [])
  })

  it("the leaf modules import nothing", () => {
    for (const m of leaves) assert.deepEqual(imports(join(src, m)), [], m)
  })

  it("the pure charts modules import no node: builtins", () => {
    for (const m of pure) assert.deepEqual(imports(join(src, m)).filter((s) => s.startsWith("node:")), [], m)
  })
})
