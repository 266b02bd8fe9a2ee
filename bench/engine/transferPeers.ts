/**
 * The two ends of bench/engine/transfer.ts, in a module of their own so that worker
 * processes can import the kernels without running the benchmark:
 *
 * - `filled` / `ends`: the kernels of the peer-fetch graph (a `Float64Array` of `n`
 *   numbers; a number from the first and last elements of two arrays).
 * - run as a program (`node transferPeers.ts sender N`), the raw-TCP baseline's sender:
 *   it fills `N` float64s, listens on a free loopback port, prints the port, and answers
 *   every byte a client sends with the array's bytes, until its stdin closes.
 *
 * @since 0.1.0
 */
import { createServer } from "node:net"

/**
 * `n` float64s: `seed`, `seed + 1`, … (written, so every page is real).
 *
 * @since 0.1.0
 * @category kernels
 */
export const filled = (n: number, seed: number): Float64Array => {
  const a = new Float64Array(n)
  for (let i = 0; i < n; i++) a[i] = seed + i
  return a
}

/**
 * `a[0] + a[last] + b[0]`: a small result that needs both inputs whole on one worker.
 *
 * @since 0.1.0
 * @category kernels
 */
export const ends = (a: Float64Array, b: Float64Array): number => a[0]! + a[a.length - 1]! + b[0]!

if (process.argv[2] === "sender") {
  const bytes = new Uint8Array(filled(Number(process.argv[3]), 0).buffer)
  const server = createServer((socket) => {
    socket.setNoDelay(true)
    socket.on("data", (d) => {
      for (let i = 0; i < d.length; i++) socket.write(bytes)
    })
    socket.on("error", () => socket.destroy())
  })
  server.listen(0, "127.0.0.1", () => {
    const a = server.address()
    process.stdout.write(`${typeof a === "object" && a !== null ? a.port : 0}\n`)
  })
  process.stdin.resume()
  process.stdin.on("end", () => process.exit(0))
}
