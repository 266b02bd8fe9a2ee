/**
 * Node's own TLS against plain TCP on loopback, no Tessera code (issue 33's reference):
 * a server process writes `--mib` MiB (default 64) on request, six times over one
 * connection, to a client in this process; plain TCP, TLS 1.3 with an external PSK and
 * AES-128-GCM (the cluster's suite), and ChaCha20-Poly1305. Prints MiB/s of each transfer:
 * the first (cold: socket buffers growing, pages faulted in) and the warm ones after it.
 * What the cluster's data plane over TLS can at most keep of plain TCP on this machine.
 *
 *   node bench/engine/nodeTls.ts [--mib 64]
 *
 * @since 0.1.0
 */
import { fork } from "node:child_process"
import { connect as tcpConnect, createServer as tcpServer, type Socket } from "node:net"
import { connect as tlsConnect, createServer as tlsServer } from "node:tls"
import { fileURLToPath } from "node:url"

const argv = process.argv.slice(2)
const mib = argv.includes("--mib") ? Number(argv[argv.indexOf("--mib") + 1]) : 64
const N = mib * 2 ** 20
const psk = Buffer.alloc(32, 3)
const modes = ["plain", "TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256"] as const

if (argv[0] === "--serve") {
  const mode = argv[1]!
  const buf = Buffer.alloc(N, 7)
  const onConn = (s: Socket) => void s.on("data", () => s.write(buf))
  const srv = mode === "plain" ? tcpServer(onConn) : tlsServer({ pskCallback: () => psk, ciphers: mode, minVersion: "TLSv1.3" }, onConn)
  srv.listen(0, "127.0.0.1", () => process.send!((srv.address() as { port: number }).port))
} else {
  console.log(`Node ${process.version}: ${mib} MiB transfers from another process over loopback, MiB/s (first, then warm)`)
  for (const mode of modes) {
    const child = fork(fileURLToPath(import.meta.url), ["--serve", mode, "--mib", String(mib)])
    const port = await new Promise<number>((r) => child.once("message", (m) => r(m as number)))
    const c: Socket = mode === "plain"
      ? tcpConnect(port, "127.0.0.1")
      : tlsConnect({ port, host: "127.0.0.1", pskCallback: () => ({ psk, identity: "bench" }), ciphers: mode, checkServerIdentity: () => undefined, minVersion: "TLSv1.3" })
    await new Promise((r) => c.once(mode === "plain" ? "connect" : "secureConnect", r))
    const rates: Array<number> = []
    for (let i = 0; i < 6; i++) {
      const t0 = performance.now()
      let got = 0
      await new Promise<void>((done) => {
        const on = (d: Buffer) => {
          got += d.length
          if (got >= N) (c.off("data", on), done())
        }
        c.on("data", on)
        c.write("x")
      })
      rates.push(N / 2 ** 20 / ((performance.now() - t0) / 1000))
    }
    c.destroy()
    child.kill()
    const warm = rates.slice(1).sort((a, b) => a - b)
    console.log(`${mode.padEnd(30)} first ${rates[0]!.toFixed(0).padStart(5)}   warm median ${warm[warm.length >> 1]!.toFixed(0).padStart(5)}   (${rates.map((r) => r.toFixed(0)).join(" ")})`)
  }
}
