/**
 * Virtual hosts for cluster tests and benchmarks: `count` Linux network namespaces, each
 * with one veth pair to a bridge in the root namespace, so traffic between them (and to
 * this process, which stays in the root namespace on the bridge's address) crosses real
 * (virtual) interfaces instead of loopback.
 *
 *   root ns: bridge tbr<pid> 10.A.B.1/24 ── tve<pid><i> ══ eth0 10.A.B.<i+1> (ns tessera-<pid>-h<i>)
 *
 * `virtualHosts` makes them (the reason it cannot, instead, when not root, without `ip`
 * or `unshare`, or when the kernel or container refuses a step); `exec` gives the argv
 * that runs a command in a host's namespace under its own host name (`unshare --uts`);
 * `counters` reads a host's root-side veth counters; `tearDown` removes everything
 * (each step may not have happened). Names and the subnet come from the pid (a subnet
 * already on the machine is passed over); namespaces left by a killed process are swept
 * first.
 *
 * Leaves out: IPv6, routing between namespaces other than by the bridge, traffic shaping
 * (`tc`: latency, bandwidth limits).
 *
 * @since 0.1.0
 */
import { spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"

const ip = (args: ReadonlyArray<string>) => spawnSync("ip", args, { encoding: "utf8" })

/**
 * One virtual host.
 *
 * @since 0.1.0
 */
export interface VirtualHost {
  /** network namespace */
  readonly ns: string
  /** the root-side end of its veth pair */
  readonly veth: string
  /** its host name (what `os.hostname()` says there) */
  readonly name: string
  /** its address on the bridge's subnet */
  readonly ip: string
}

/**
 * Virtual hosts made by {@link virtualHosts}.
 *
 * @since 0.1.0
 */
export interface VirtualHosts {
  /** the bridge's address: this process's, in the root namespace */
  readonly bridgeIp: string
  readonly hosts: ReadonlyArray<VirtualHost>
  /** `["ip", argv]` running `command` in `host`'s namespace under its host name */
  readonly exec: (host: VirtualHost, command: ReadonlyArray<string>) => readonly [string, ReadonlyArray<string>]
  /** the host's root-side veth byte counters (rx: sent by the host; tx: delivered to it) */
  readonly counters: (host: VirtualHost) => { readonly rx: number; readonly tx: number }
  /** removes the namespaces, veths and bridge */
  readonly tearDown: () => void
}

/** 10.A.B (A in 200..249) from `seed`; the next one while this machine has addresses in it. */
const freeSubnet = (seed: number): string => {
  const taken = ip(["-4", "addr"]).stdout ?? ""
  for (let k = 0; ; k++) {
    const n = seed + k * 7919
    const prefix = `10.${200 + (n % 50)}.${1 + (Math.floor(n / 50) % 250)}`
    if (!taken.includes(` ${prefix}.`) || k > 100) return prefix
  }
}

/** Removes the namespaces and bridges of earlier runs whose process is gone. */
const sweep = () => {
  const alive = (p: number) => {
    try {
      process.kill(p, 0)
      return true
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === "EPERM"
    }
  }
  for (const line of (ip(["netns", "list"]).stdout ?? "").split("\n")) {
    const m = /^tessera-(\d+)-h\d+\b/.exec(line)
    if (m !== null && !alive(Number(m[1]))) {
      ip(["netns", "del", m[0]])
      ip(["link", "del", `tbr${m[1]}`])
    }
  }
}

/**
 * Makes `count` virtual hosts, or says in one line why it cannot.
 *
 * @since 0.1.0
 */
export const virtualHosts = (count: number): VirtualHosts | { readonly reason: string } => {
  if (process.platform !== "linux") return { reason: "network namespaces are Linux's" }
  if (process.getuid?.() !== 0) return { reason: "not root (ip netns needs CAP_SYS_ADMIN and CAP_NET_ADMIN)" }
  for (const tool of ["ip", "unshare"]) {
    if (spawnSync(tool, ["-V"], { encoding: "utf8" }).error !== undefined) return { reason: `${tool} is not installed (iproute2, util-linux)` }
  }
  sweep()
  const pid = process.pid
  const prefix = freeSubnet(pid)
  const bridge = `tbr${pid}`
  const bridgeIp = `${prefix}.1`
  const hosts: ReadonlyArray<VirtualHost> = Array.from({ length: count }, (_, k) => ({
    ns: `tessera-${pid}-h${k + 1}`,
    veth: `tve${pid}${k + 1}`,
    name: `tns${pid}h${k + 1}`,
    ip: `${prefix}.${k + 2}`
  }))
  const tearDown = () => {
    for (const h of hosts) {
      ip(["link", "del", h.veth])
      ip(["netns", "del", h.ns])
    }
    ip(["link", "del", bridge])
  }
  const steps: ReadonlyArray<ReadonlyArray<string>> = [
    ...hosts.map((h) => ["netns", "add", h.ns]),
    ["link", "add", bridge, "type", "bridge"],
    ["addr", "add", `${bridgeIp}/24`, "dev", bridge],
    ["link", "set", bridge, "up"],
    ...hosts.flatMap((h) => [
      ["link", "add", h.veth, "type", "veth", "peer", "name", "eth0", "netns", h.ns],
      ["link", "set", h.veth, "master", bridge],
      ["link", "set", h.veth, "up"],
      ["-n", h.ns, "addr", "add", `${h.ip}/24`, "dev", "eth0"],
      ["-n", h.ns, "link", "set", "eth0", "up"],
      ["-n", h.ns, "link", "set", "lo", "up"]
    ])
  ]
  for (const s of steps) {
    const r = ip(s)
    if (r.status !== 0) {
      tearDown()
      return { reason: `ip ${s.join(" ")} failed: ${(r.stderr || r.error?.message || "").trim()}` }
    }
  }
  return {
    bridgeIp,
    hosts,
    exec: (h, command) => ["ip", ["netns", "exec", h.ns, "unshare", "--uts", "sh", "-c", "hostname \"$0\" && exec \"$@\"", h.name, ...command]],
    counters: (h) => {
      const read = (what: string) => Number(readFileSync(`/sys/class/net/${h.veth}/statistics/${what}_bytes`, "utf8"))
      return { rx: read("rx"), tx: read("tx") }
    },
    tearDown
  }
}
