/**
 * How a worker finds its default contact host. As dask's `--listen-address` and
 * `--contact-address`, a worker binds its runner socket and data plane to its listen
 * host (an interface's address, or a wildcard such as `0.0.0.0` for every interface)
 * and advertises a contact host, the one in its name (`tessera-worker@HOST:PORT`) that
 * the scheduler, drivers and peers connect to. A wildcard can never be a contact host.
 *
 * The default contact host is, as dask's `get_ip`, this machine's address on the route
 * to the scheduler (or the runner storage's server): the source address the kernel picks
 * for a UDP socket connected there (no packet is sent). On one machine that is
 * `127.0.0.1`; a worker on another host gets its address on the interface that reaches
 * the scheduler, so the scheduler can reach it back (given no NAT between them).
 *
 * Leaves out: several contact addresses per worker, NAT (a contact host behind NAT
 * must be given), name lookup of the contact host (a name is advertised as given).
 *
 * @since 0.1.0
 * @internal
 */
import { createSocket } from "node:dgram"
import { lookup } from "node:dns/promises"
import { isIP } from "node:net"

// The checks of a contact host (`contactProblem`, `isWildcardHost`) are pure and live in
// Cluster.ts, where the CLI can use them without loading node modules.

/**
 * This machine's address on the route to `host` (a name is looked up first): what
 * `connect` on a UDP socket makes the kernel choose as the source address. Rejects with
 * an error naming `host` and why when there is no route or the name is unknown.
 *
 * @since 0.1.0
 * @internal
 */
export const routeTo = async (host: string): Promise<string> => {
  // `[::1]` (a URL's or HOST:PORT's IPv6 host) is ::1
  const bare = host.replace(/^\[(.*)\]$/, "$1")
  if (bare === "") throw new Error("no host to route to")
  const target = isIP(bare) !== 0 ? { address: bare, family: isIP(bare) } : await lookup(bare)
  return await new Promise<string>((resolve, reject) => {
    const s = createSocket(target.family === 6 ? "udp6" : "udp4")
    const fail = (e: Error) => {
      s.close()
      reject(e)
    }
    s.once("error", fail)
    try {
      // any port: connect only picks the route, nothing is sent. With no route Node
      // leaves the socket unbound rather than failing: its address is then a wildcard
      s.connect(9, target.address, () => {
        const a = s.address().address
        if (a === "0.0.0.0" || a === "::") return fail(new Error(`no route to ${target.address}`))
        s.close()
        resolve(a)
      })
    } catch (e) {
      fail(e instanceof Error ? e : new Error(String(e)))
    }
  })
}
