/**
 * The entry point of the bundled CLI (`scripts/bundleCli.ts` bundles this module into
 * dist/bundle/cli/main.js; docs/package.md): runs the command line itself when the
 * bundle serves it (`argv.runsBundled`: analyze, report, export, plot, sql, help, with no
 * module of the user's), else hands it to the compiled tree, dist/src/cli/main.js, so
 * that a bundle started for any command line runs it right. Not run from the sources.
 *
 * @since 0.1.0
 */
import { runsBundled } from "./argv.ts"

if (runsBundled(process.argv.slice(2), process.env)) await import("./main.ts")
// from dist/bundle/cli/ (and from dist/src/cli/, where tsc puts this file) the compiled
// tree's entry; a URL computed at run time, which the bundler leaves as it is
else await import(new URL("../../src/cli/main.js", import.meta.url).href)
