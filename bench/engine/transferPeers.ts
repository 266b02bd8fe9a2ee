/**
 * The two ends of bench/engine/transfer.ts, in a module of their own so that worker
 * processes can import the kernels without running the benchmark:
 *
 * - `filled` / `ends`: the kernels of the peer-fetch graph (a `Float64Array` of `n`
 *   numbers; a number from the first and last elements of two arrays).
 * - run as a program (`node transferPeers.ts sender N [HOST]`), the raw-TCP baseline's
 *   sender: it fills `N` float64s, listens on a free port of HOST (default 127.0.0.1),
 *   prints the port, and answers every byte a client sends with the array's bytes, until
 *   its stdin closes.
 * - `node transferPeers.ts receiver HOST PORT N`, its receiver: connects once, and for
 *   every line on its stdin asks (one byte), times until all `N` float64s are in one
 *   `Float64Array` (the chunks copied together, as a receiver must) and prints the
 *   seconds, until its stdin closes. A process of its own, so that it can run on another
 *   (virtual) host than the sender and the benchmark.
 *
 * @since 0.1.0
 */
import { connect, createServer } from "node:net"
import { createInterface } from "node:readline"

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
  server.listen(0, process.argv[4] ?? "127.0.0.1", () => {
    const a = server.address()
    process.stdout.write(`${typeof a === "object" && a !== null ? a.port : 0}\n`)
  })
  process.stdin.resume()
  process.stdin.on("end", () => process.exit(0))
}

if (process.argv[2] === "receiver") {
  const n = Number(process.argv[5])
  const bytes = n * 8
  const socket = connect(Number(process.argv[4]), process.argv[3]!)
  socket.setNoDelay(true)
  const once = () =>
    new Promise<number>((resolve) => {
      const chunks: Array<Buffer> = []
      let got = 0
      const t0 = performance.now()
      const onData = (d: Buffer) => {
        chunks.push(d)
        got += d.length
        if (got < bytes) return
        socket.off("data", onData)
        const all = Buffer.concat(chunks, bytes)
        const a = new Float64Array(all.buffer, all.byteOffset, n)
        const t1 = performance.now()
        if (a[n - 1] !== n - 1) throw new Error("raw stream: wrong bytes")
        resolve((t1 - t0) / 1000)
      }
      socket.on("data", onData)
      socket.write(Buffer.from([1]))
    })
  socket.once("connect", async () => {
    for await (const _ of createInterface({ input: process.stdin })) process.stdout.write(`${await once()}\n`)
    socket.destroy()
  })
}
