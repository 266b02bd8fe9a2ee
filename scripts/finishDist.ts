/**
 * What the built package needs beyond what `tsc` writes, done to `dist/src/` after it
 * (`npm run build` runs `node scripts/finishDist.ts` between `tsc` and the CLI bundle);
 * running it twice changes nothing. Both were issue 31's (items 7 and 8).
 *
 * - **The Node.js version check first in every public module.** `src/index.ts` imports
 *   `src/NodeVersion.ts` in its source; this puts the same import first in every other
 *   module `package.json`'s `exports` reach (every `.js` under `dist/src/<layer>/`
 *   outside an `internal/` folder), so that `import "tessera/<layer>/<Module>"` on a
 *   Node.js older than 24 throws one line before any of Tessera runs, as
 *   `import "tessera"` does. The command (`dist/src/cli/`, not an export; `bin/tessera.js`
 *   checks the version itself) is left as it is. The import goes on the module's first
 *   line, before its header comment, so every other line, and every stack trace's line
 *   number, stays what `tsc` wrote.
 * - **WebGPU's types by TypeScript version.** Declarations that use WebGPU's global types
 *   (`GPUDevice`, `GPUBuffer`, … in `engine/Gpu.d.ts`) keep their
 *   `/// <reference types="@webgpu/types" preserve="true" />` through `tsc`; here it
 *   becomes `/// <reference types="tessera/webgpu" />`, which `exports` resolves by the
 *   consumer's TypeScript version (`types@<6`): TypeScript 5, whose `lib.dom` has no
 *   WebGPU, gets `types/webgpu-ts5.d.ts` (it references `@webgpu/types`, a dependency);
 *   TypeScript 6 and later, whose `lib.dom` declares WebGPU itself, get
 *   `types/webgpu.d.ts`, empty, since `@webgpu/types` beside `lib.dom` declares every
 *   name twice (`Duplicate identifier 'GPUTextureFormat'` under `skipLibCheck: false`).
 *   The sources keep `@webgpu/types`: a type reference cannot name the package itself
 *   inside this repository.
 *
 * @since 0.1.0
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join, relative, resolve, sep } from "node:path"

const dist = resolve(import.meta.dirname, "..", "dist", "src")
const guard = join(dist, "NodeVersion.js")
const layers = ["analysis", "dsl", "engine", "kernels", "profiler", "report", "trace"]

/** Every file under `dir` whose name ends with `suffix`, outside `internal/` folders when `skipInternal`. */
const files = (dir: string, suffix: string, skipInternal: boolean): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? skipInternal && e.name === "internal" ? [] : files(join(dir, e.name), suffix, skipInternal)
      : e.name.endsWith(suffix) ? [join(dir, e.name)] : []
  )

readFileSync(guard) // fails the build, naming the file, when tsc did not emit the check
for (const file of layers.flatMap((layer) => files(join(dist, layer), ".js", true))) {
  const specifier = relative(join(file, ".."), guard).split(sep).join("/")
  const line = `import "${specifier.startsWith(".") ? specifier : `./${specifier}`}"; `
  const text = readFileSync(file, "utf8")
  if (!text.startsWith(line)) writeFileSync(file, line + text)
}

const webgpuReference = /^\/\/\/ <reference types="@webgpu\/types" preserve="true" \/>$/m
let referenced = 0
for (const file of files(dist, ".d.ts", false)) {
  const text = readFileSync(file, "utf8")
  if (text.includes(`/// <reference types="tessera/webgpu" />`)) referenced++
  else if (webgpuReference.test(text)) {
    writeFileSync(file, text.replace(webgpuReference, `/// <reference types="tessera/webgpu" />`))
    referenced++
  }
}
// Gpu.ts has the reference; without it here, the emitted declarations lost it again
if (referenced === 0) throw new Error(`finishDist: no declaration in ${dist} references @webgpu/types (preserve="true")`)
