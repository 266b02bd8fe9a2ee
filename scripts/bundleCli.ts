/**
 * The `tessera` command as a bundle (esbuild), for the installed package: the compiled
 * CLI's bundle entry (dist/src/cli/bundleMain.js) and the two worker threads `analyze`
 * starts (the decoders, the CSV writer) become a few files in dist/bundle/cli/: one
 * module per entry, chunks for what loads lazily (split: DuckDB's wrapper, the report,
 * the engine are loaded only by the commands that use them), Apache Arrow as one module
 * of its own, where the compiled tree is ~430 modules for `analyze` (Effect's CLI
 * framework alone ~200). Node resolves, reads and links each module on every start
 * (~0.5 ms each here), so the bundle starts in about half the time (BENCHMARKS.md).
 *
 * `bin/tessera.js` runs the bundle; the bundle runs only the command lines that run no
 * kernels and no module of the user's (`src/cli/argv.ts` `runsBundled`: `analyze`,
 * `report`, `export`, `plot`, `sql` and help, without a module argument: a user analysis
 * imports Tessera itself, which must then be one copy, and kernels are found by their
 * module's URL) and hands every other one to the compiled tree (`src/cli/bundleMain.ts`).
 * The bundle's files sit two folders under the package root, as dist/src/cli/ does, so
 * that the paths the CLI computes from its own URL (the package's package.json, the
 * package root, the compiled tree's entry) hold in both; the worker threads' URLs
 * (`./decodeWorker.js`, `./csvWorker.js`) name the entries beside the chunks.
 *
 * Arrow is bundled apart, unsplit: split into chunks, its modules' import cycles ran in
 * an order that left a visitor undefined (`getVisitFnByTypeId` of undefined); every
 * `apache-arrow` import of the CLI then names that one module (`./arrow.js`).
 *
 * The bundle carries the versions of Effect, Arrow and msgpack it was built with (the
 * lockfile's). Native and optional packages (DuckDB, WebGPU, resvg, systeminformation,
 * PostgreSQL's client) and the report's renderers (Vega, Vega-Lite, viz.js: loaded by
 * report and plot only, where bundling saves no start-up) stay imports of the installed
 * ones, so the report's and the figures' specs are the installed packages' whichever
 * entry runs.
 *
 * `node scripts/bundleCli.ts` after `tsc` (`npm run build` runs both).
 *
 * @since 0.1.0
 */
import { build, type Plugin } from "esbuild"
import { rmSync } from "node:fs"
import { join, resolve } from "node:path"

const root = resolve(import.meta.dirname, "..")
const outdir = join(root, "dist", "bundle", "cli")
const external = ["@duckdb/*", "webgpu", "@resvg/*", "systeminformation", "pg", "pg-native", "playwright-core", "vega", "vega-lite", "@viz-js/viz"]

/** Arrow's names the CLI imports from a subpath that the package's main module does not export. */
const arrowSubpathOnly = `export { Footer } from "apache-arrow/ipc/metadata/file"`

/** Every `apache-arrow` import (the package and its subpaths) as the bundle's own Arrow module. */
const arrowModule: Plugin = {
  name: "arrow-module",
  setup: (b) => b.onResolve({ filter: /^apache-arrow(\/.*)?$/ }, () => ({ path: "./arrow.js", external: true }))
}

const common = {
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node24",
  external,
  logLevel: "warning",
  legalComments: "none",
  // CommonJS dependencies that `require` Node's modules, inside an ES module
  banner: { js: `import { createRequire as __tesseraRequire } from "node:module"; const require = __tesseraRequire(import.meta.url);` }
} as const

rmSync(outdir, { recursive: true, force: true })
await build({
  ...common,
  stdin: { contents: `export * from "apache-arrow"\n${arrowSubpathOnly}\n`, resolveDir: root, loader: "js" },
  outfile: join(outdir, "arrow.js")
})
await build({
  ...common,
  entryPoints: {
    main: join(root, "dist", "src", "cli", "bundleMain.js"),
    decodeWorker: join(root, "dist", "src", "analysis", "internal", "decodeWorker.js"),
    csvWorker: join(root, "dist", "src", "analysis", "internal", "csvWorker.js")
  },
  splitting: true,
  outdir,
  entryNames: "[name]",
  chunkNames: "chunk-[hash]",
  plugins: [arrowModule]
})
