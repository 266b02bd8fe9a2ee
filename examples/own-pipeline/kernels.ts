// The kernels of the walkthrough in docs/dsl.md ("A pipeline of your own"): plain exported
// functions that worker threads import by URL. A kernel gets what its task was given
// (a chunk for each block, then the extras) and returns a value; it imports nothing it
// does not need, and `import type` is erased, so this module loads no Tessera code.
import type { Chunk } from "tessera/engine/Chunk"

/**
 * `mapBlocks` kernel: sign(x) * log(1 + |x| / scale), element by element. Gets one chunk
 * (rows x columns, row-major, in shared memory: read it, never write it) and the extra
 * `scale`; returns a new chunk with the same rows, of the dtype and columns its stage
 * declares.
 */
export const signedLog = (chunk: Chunk, scale: number): Chunk => {
  const x = chunk.data as Float64Array
  const out = new Float64Array(new SharedArrayBuffer(x.byteLength)) // in shared memory already: not copied again
  for (let i = 0; i < x.length; i++) out[i] = Math.sign(x[i]!) * Math.log1p(Math.abs(x[i]!) / scale)
  return { dtype: "float64", shape: chunk.shape, data: out }
}

/** `treeReduce` partial: the largest |x| of each column of one chunk. */
export const absMax = (chunk: Chunk): Float64Array => {
  const x = chunk.data as Float64Array
  const columns = chunk.shape[1] ?? 1
  const out = new Float64Array(columns)
  for (let i = 0; i < x.length; i++) out[i % columns] = Math.max(out[i % columns]!, Math.abs(x[i]!))
  return out
}

/** `treeReduce` combine: gets a list of partials (or of earlier combines), returns one. */
export const absMaxCombine = (partials: ReadonlyArray<Float64Array>): Float64Array => {
  const out = new Float64Array(partials[0]!.length)
  for (const p of partials) for (let j = 0; j < out.length; j++) out[j] = Math.max(out[j]!, p[j]!)
  return out
}
