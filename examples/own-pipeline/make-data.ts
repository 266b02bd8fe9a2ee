// Writes the walkthrough's data file (docs/dsl.md, "A pipeline of your own"):
//   node examples/own-pipeline/make-data.ts [own.npy] [rows]
// a float64 .npy of rows x 2 (default 100,000): three clusters whose values span
// decades, with a spread proportional to their size. Plain Node, no Tessera: a .npy is
// a small header (a Python dict literal) and the raw little-endian values.
import { writeFileSync } from "node:fs"

const file = process.argv[2] ?? "own.npy"
const rows = Number(process.argv[3] ?? 100_000)
const centres = [[-300, 5], [2, -2], [40, 900]]

let seed = 42 // mulberry32: the same file on every machine
const uniform = () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32
}
const normal = () => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform())

const data = new Float64Array(rows * 2)
for (let i = 0; i < rows; i++) {
  const c = centres[i % centres.length]!
  for (let j = 0; j < 2; j++) data[i * 2 + j] = c[j]! * Math.exp(0.2 * normal())
}

// version 1.0 header, padded with spaces to a multiple of 64 bytes, ending in "\n"
let dict = `{'descr': '<f8', 'fortran_order': False, 'shape': (${rows}, 2), }`
dict = dict.padEnd(Math.ceil((10 + dict.length + 1) / 64) * 64 - 10 - 1) + "\n"
const head = Buffer.alloc(10)
head.write("\x93NUMPY", 0, "latin1")
head.writeUInt8(1, 6)
head.writeUInt8(0, 7)
head.writeUInt16LE(dict.length, 8)
writeFileSync(file, Buffer.concat([head, Buffer.from(dict, "latin1"), Buffer.from(data.buffer)]))
console.log(`${file}: ${rows} x 2 float64`)
