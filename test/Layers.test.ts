/**
 * The one-way flow between layers (DESIGN.md, docs/architecture.md), checked on what
 * every source file reaches, directly or through other files (static imports and
 * `import()` alike):
 *
 *   dsl -> engine, kernels      engine -> (nothing)         kernels -> engine
 *   trace -> (nothing)          profiler -> engine, trace   analysis -> trace
 *   report -> analysis, trace   cli, src/index.ts -> everything
 *   dashboard -> engine, report, analysis, trace (a hook consumer that draws the report's charts)
 *
 * Kernels are what worker threads import; the DSL names them by module and uses their
 * pure helpers (dtype rules, seeded random numbers), so it may reach them.
 *
 * No I/O in dsl: nothing dsl reaches through static imports imports a `node:` builtin,
 * so a pipeline can be built and inspected anywhere. What is loaded with `import()` is
 * exempt: the Executor's layers load the worker pool (node:worker_threads) when they are
 * built, i.e. only where a program provides an executor to run on.
 *
 * Nobody imports another layer's internal/ (examples/ neither). One leaf module,
 * trace/KeySplit.ts (the key -> function name rule, which imports nothing), may be
 * reached from every layer: the engine names tasks with it, so the engine, the trace
 * writer and the analysis agree.
 */
import assert from "node:assert/strict"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../", import.meta.url))
const src = join(root, "src")

const files = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : []
  )

/** Import specifiers of a file: static (including `export … from`) and dynamic. */
const imports = (file: string): Array<{ readonly spec: string; readonly dynamic: boolean }> =>
  [...readFileSync(file, "utf8").matchAll(/(?:^|\n)\s*(?:import|export)[^"'`;]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g)].map(
    (m) => ({ spec: m[1] ?? m[2]!, dynamic: m[1] === undefined })
  )

/** A type-only import (`import type …`, `export type …`) loads nothing. */
const loads = (file: string): Array<{ readonly spec: string; readonly dynamic: boolean }> =>
  [...readFileSync(file, "utf8").matchAll(/(?:^|\n)\s*(?:import|export)(\s+type\b)?[^"'`;]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g)]
    .filter((m) => m[1] === undefined)
    .map((m) => ({ spec: m[2] ?? m[3]!, dynamic: m[2] === undefined }))

/** Path under src/ of a relative import (undefined: a package or builtin, or outside src/). */
const target = (file: string, spec: string): string | undefined => {
  if (!spec.startsWith(".")) return undefined
  const path = relative(src, join(dirname(file), spec))
  return path.startsWith("..") ? undefined : path
}

const layerOf = (path: string): string => path.split("/")[0]!

const rules: Record<string, { readonly layers: ReadonlyArray<string>; readonly nodeBuiltins: boolean }> = {
  dsl: { layers: ["dsl", "engine", "kernels"], nodeBuiltins: false },
  engine: { layers: ["engine"], nodeBuiltins: true },
  kernels: { layers: ["kernels", "engine"], nodeBuiltins: true },
  trace: { layers: ["trace"], nodeBuiltins: true },
  profiler: { layers: ["profiler", "engine", "trace"], nodeBuiltins: true },
  analysis: { layers: ["analysis", "trace"], nodeBuiltins: true },
  report: { layers: ["report", "analysis", "trace"], nodeBuiltins: true },
  dashboard: { layers: ["dashboard", "engine", "report", "analysis", "trace"], nodeBuiltins: true }
}

/** Modules any layer may reach; they import nothing (checked below). */
const leaves = new Set(["trace/KeySplit.ts"])

/**
 * Every src/ module a file reaches, with the chain that reaches it; `staticOnly` follows
 * static imports only (what loads when the file loads).
 */
const reach = (start: string, staticOnly: boolean): Map<string, Array<string>> => {
  const seen = new Map<string, Array<string>>()
  const visit = (file: string, chain: Array<string>) => {
    for (const { spec, dynamic } of loads(file)) {
      if (staticOnly && dynamic) continue
      const path = target(file, spec)
      if (path === undefined || seen.has(path) || !existsSync(join(src, path))) continue
      seen.set(path, [...chain, path])
      visit(join(src, path), [...chain, path])
    }
  }
  visit(start, [relative(src, start)])
  return seen
}

describe("Layers", () => {
  it("every module a layer reaches, directly or not, is in a layer it may import", () => {
    const broken = new Set<string>()
    for (const file of files(src)) {
      const rule = rules[layerOf(relative(src, file))]
      if (rule === undefined) continue
      for (const [path, chain] of reach(file, false)) {
        if (leaves.has(path) || rule.layers.includes(layerOf(path))) continue
        broken.add(`${chain.join(" -> ")} (${layerOf(path)})`)
      }
    }
    assert.deepEqual([...broken], [])
  })

  it("nothing the dsl loads with its modules imports a node: builtin", () => {
    const broken = new Set<string>()
    for (const file of files(join(src, "dsl"))) {
      const chains = [[relative(src, file)], ...reach(file, true).values()]
      for (const chain of chains) {
        for (const { spec } of loads(join(src, chain.at(-1)!))) {
          if (spec.startsWith("node:")) broken.add(`${chain.join(" -> ")} imports ${spec}`)
        }
      }
    }
    assert.deepEqual([...broken], [])
  })

  it("no module imports another layer's internal/ modules", () => {
    const broken: Array<string> = []
    for (const file of [...files(src), ...files(join(root, "examples"))]) {
      const from = relative(src, file)
      for (const { spec } of imports(file)) {
        const path = target(file, spec)
        if (path === undefined || layerOf(path) === layerOf(from)) continue
        if (path.split("/")[1] === "internal") broken.push(`${from} imports ${spec}`)
      }
    }
    assert.deepEqual(broken, [])
  })

  it("the leaf modules import nothing", () => {
    for (const m of leaves) assert.deepEqual(imports(join(src, m)), [], m)
  })
})
