/**
 * Process and host measurements for the resource monitor.
 *
 * - cpu (% of one core, can exceed 100 with several threads busy) and memory (RSS bytes)
 *   come from `process.cpuUsage()` / `process.memoryUsage.rss()`, which cover the whole
 *   process: the main thread and every worker thread (DASF samples only the client
 *   process, DASF-NOTES 16);
 * - num_fds: entries of /proc/self/fd (0 where there is no /proc), not counting the
 *   sampler's own descriptors;
 * - other processes (`processes`: the cluster's worker processes on this host): their
 *   cpu, memory and fds are added to this process's, read from /proc/PID/stat (utime +
 *   stime, at Linux's USER_HZ of 100 ticks a second), /proc/PID/status (VmRSS) and
 *   /proc/PID/fd; a process seen for the first time adds no cpu to that sample (no
 *   previous reading), one that is gone adds nothing;
 * - host network and disk byte rates: on Linux read straight from /proc/net/dev and
 *   /proc/diskstats (one `pread` each on descriptors the sampler keeps open until
 *   `close`, cheap enough for 10 Hz); elsewhere through
 *   systeminformation (`networkStats`, `fsStats`), whose Linux implementation spawns a
 *   shell per call, too costly at 10 Hz on a 2-core machine;
 * - GPU: one `nvidia-smi` query (internal/gpu.ts) when `nvidia-smi` is on PATH, polled in
 *   the background at most once a second: mean utilization (%) and total memory used
 *   (bytes) of the visible GPUs; otherwise what Tessera's own GPU workers report
 *   (`Gpu.usage`: device bytes they hold, and their submit-to-completion busy time over
 *   the sample's interval per GPU worker, in %); 0 without either. The fields are always
 *   present (DASF-NOTES 1).
 *   (systeminformation's `graphics()` is not used for this: it also runs lspci and more
 *   shells on every call.)
 *
 * @since 0.1.0
 * @internal
 */
import { closeSync, openSync, readdirSync, readFileSync, readSync } from "node:fs"
import si from "systeminformation"
import * as Gpu from "../../engine/Gpu.ts"
import { type GpuSource, nvidiaSmi, parseNvidiaSmi } from "./gpu.ts"

/**
 * A /proc file read again and again through one descriptor: each read is one `pread` at
 * offset 0 (the kernel regenerates the text), instead of open, fstat, read and close per
 * sample. Cold, a sample's reads were most of its ~250 µs on the demo's 2-core machine.
 */
class ProcFile {
  private fd = -1
  private buf = Buffer.allocUnsafe(4096)
  private failed = false
  readonly path: string
  constructor(path: string) {
    this.path = path
  }

  /** The file's text, or null where it cannot be read (no /proc). */
  read(): string | null {
    if (this.failed) return null
    try {
      if (this.fd < 0) this.fd = openSync(this.path, "r")
      let n = readSync(this.fd, this.buf, 0, this.buf.length, 0)
      while (n === this.buf.length) {
        this.buf = Buffer.allocUnsafe(this.buf.length * 2)
        n = readSync(this.fd, this.buf, 0, this.buf.length, 0)
      }
      return this.buf.toString("latin1", 0, n)
    } catch {
      this.close()
      this.failed = true
      return null
    }
  }

  get isOpen(): boolean {
    return this.fd >= 0
  }

  close(): void {
    if (this.fd < 0) return
    try {
      closeSync(this.fd)
    } catch {
      // already gone: nothing to release
    }
    this.fd = -1
  }
}

/** Total bytes received / sent over every interface (as psutil's net_io_counters). */
const parseNet = (text: string | null): [number, number] | null => {
  if (text === null) return null
  let rx = 0
  let tx = 0
  const lines = text.split("\n")
  for (let i = 2; i < lines.length; i++) {
    const line = lines[i]!
    const colon = line.indexOf(":")
    if (colon < 0) continue
    const f = line.slice(colon + 1).trim().split(/\s+/)
    rx += Number(f[0])
    tx += Number(f[8])
  }
  return [rx, tx]
}

const wholeDisk = /^(sd[a-z]+|vd[a-z]+|xvd[a-z]+|hd[a-z]+|nvme\d+n\d+|mmcblk\d+)$/

/** Total bytes read / written on whole disks (partitions skipped: no double count). */
const parseDisk = (text: string | null): [number, number] | null => {
  if (text === null) return null
  let r = 0
  let w = 0
  for (const line of text.split("\n")) {
    const f = line.trim().split(/\s+/)
    if (f.length < 10 || !wholeDisk.test(f[2]!)) continue
    r += Number(f[5]) * 512
    w += Number(f[9]) * 512
  }
  return [r, w]
}

/**
 * The args of one `Resource Usage` event (DASF's names).
 *
 * @since 0.1.0
 * @internal
 */
export type ResourceArgs = {
  cpu: number
  memory: number
  time: number
  "host_net_io.read_bps": number
  "host_net_io.write_bps": number
  "host_disk_io.read_bps": number
  "host_disk_io.write_bps": number
  num_fds: number
  gpu_utilization: number
  gpu_memory_used: number
}

/**
 * Keeps the previous counters and turns them into rates.
 *
 * @since 0.1.0
 * @internal
 */
export class HostSampler {
  private cpu = process.cpuUsage()
  private at = performance.now()
  private net: [number, number] | null
  private disk: [number, number] | null
  private readonly useProc: boolean
  private siNet: [number, number] = [0, 0]
  private siDisk: [number, number] = [0, 0]
  gpuUtilization = 0
  gpuMemoryUsed = 0
  private readonly gpu: GpuSource | null
  private gpuBusy = false
  /** busy seconds of Tessera's GPU workers at the last sample (their usage without nvidia-smi) */
  private ownBusy: number | null = null
  private readonly processes: () => ReadonlyArray<number>
  /** each other process's cpu ticks at the last sample */
  private readonly ticks = new Map<number, number>()
  private readonly netFile = new ProcFile("/proc/net/dev")
  private readonly diskFile = new ProcFile("/proc/diskstats")

  /**
   * `gpu`: where GPU readings come from (default nvidia-smi when on PATH; null: none).
   * Holds two /proc descriptors until `close`.
   */
  constructor(options: { readonly gpu?: GpuSource | null; readonly processes?: () => ReadonlyArray<number> } = {}) {
    this.processes = options.processes ?? (() => [])
    this.net = parseNet(this.netFile.read())
    this.disk = parseDisk(this.diskFile.read())
    this.useProc = this.net !== null && this.disk !== null
    this.gpu = options.gpu === undefined ? nvidiaSmi() : options.gpu
  }

  /** Whether there is a GPU source to poll. */
  get hasGpu(): boolean {
    return this.gpu !== null
  }

  /** Refreshes the GPU values (background; at most once a second; never two queries at once). */
  async pollGpu(): Promise<void> {
    if (this.gpu === null || this.gpuBusy) return
    this.gpuBusy = true
    try {
      const r = parseNvidiaSmi(await this.gpu(), process.env.CUDA_VISIBLE_DEVICES)
      this.gpuUtilization = r.utilization
      this.gpuMemoryUsed = r.memoryUsed
    } catch {
      // keep the last values; a failing nvidia-smi must not stop the monitor
    } finally {
      this.gpuBusy = false
    }
  }

  /** Refreshes host I/O rates through systeminformation (non-Linux). */
  async pollSystemInformation(): Promise<void> {
    if (this.useProc) return
    try {
      const [nets, fs] = await Promise.all([si.networkStats("*"), si.fsStats()])
      let rx = 0
      let tx = 0
      for (const n of nets) {
        rx += n.rx_sec ?? 0
        tx += n.tx_sec ?? 0
      }
      this.siNet = [rx, tx]
      this.siDisk = [fs.rx_sec ?? 0, fs.wx_sec ?? 0]
    } catch {
      this.siNet = [0, 0]
      this.siDisk = [0, 0]
    }
  }

  get needsSystemInformation(): boolean {
    return !this.useProc
  }

  /** Releases the /proc descriptors (a later sample reopens them). */
  close(): void {
    this.netFile.close()
    this.diskFile.close()
  }

  /** One sample; `time` is wall-clock seconds (from the caller's Clock). */
  sampleUnsafe(time: number): ResourceArgs {
    const now = performance.now()
    const dt = Math.max(1e-6, (now - this.at) / 1000)
    const cpu = process.cpuUsage()
    const others = this.others()
    const used = (cpu.user - this.cpu.user + cpu.system - this.cpu.system) / 1e6 + others.cpu
    this.cpu = cpu
    this.at = now
    let netR = this.siNet[0]
    let netW = this.siNet[1]
    let diskR = this.siDisk[0]
    let diskW = this.siDisk[1]
    if (this.useProc) {
      const net = parseNet(this.netFile.read())
      const disk = parseDisk(this.diskFile.read())
      if (net !== null && this.net !== null) {
        netR = Math.max(0, net[0] - this.net[0]) / dt
        netW = Math.max(0, net[1] - this.net[1]) / dt
      }
      if (disk !== null && this.disk !== null) {
        diskR = Math.max(0, disk[0] - this.disk[0]) / dt
        diskW = Math.max(0, disk[1] - this.disk[1]) / dt
      }
      this.net = net
      this.disk = disk
    }
    return {
      cpu: Math.round((used / dt) * 1000) / 10,
      memory: process.memoryUsage.rss() + others.memory,
      time,
      "host_net_io.read_bps": netR,
      "host_net_io.write_bps": netW,
      "host_disk_io.read_bps": diskR,
      "host_disk_io.write_bps": diskW,
      // the sampler's own descriptors are not the program's
      num_fds: Math.max(0, countFds() - (this.netFile.isOpen ? 1 : 0) - (this.diskFile.isOpen ? 1 : 0)) + others.fds,
      ...this.gpuFields(dt)
    }
  }

  /** CPU seconds since the last sample, resident bytes and open descriptors of the other processes. */
  private others(): { cpu: number; memory: number; fds: number } {
    const out = { cpu: 0, memory: 0, fds: 0 }
    const pids = this.processes()
    if (pids.length === 0 && this.ticks.size === 0) return out
    const seen = new Set<number>()
    for (const pid of pids) {
      if (pid === process.pid || seen.has(pid)) continue
      const p = readProcess(pid)
      if (p === null) continue
      seen.add(pid)
      const before = this.ticks.get(pid)
      if (before !== undefined) out.cpu += Math.max(0, p.ticks - before) / USER_HZ
      this.ticks.set(pid, p.ticks)
      out.memory += p.rss
      out.fds += p.fds
    }
    for (const pid of this.ticks.keys()) if (!seen.has(pid)) this.ticks.delete(pid)
    return out
  }

  /** nvidia-smi's latest reading, or without it what Tessera's GPU workers report. */
  private gpuFields(dt: number): { gpu_utilization: number; gpu_memory_used: number } {
    const own = this.gpu === null ? Gpu.usage() : null
    if (own === null) {
      this.ownBusy = null
      return { gpu_utilization: this.gpuUtilization, gpu_memory_used: this.gpuMemoryUsed }
    }
    const busy = own.busySeconds - (this.ownBusy ?? own.busySeconds)
    this.ownBusy = own.busySeconds
    return { gpu_utilization: Math.min(100, Math.round((busy / dt / Math.max(1, own.devices)) * 1000) / 10), gpu_memory_used: own.heldBytes }
  }
}

/** Linux's clock ticks per second in /proc/PID/stat (USER_HZ: 100 on every Linux port in use). */
const USER_HZ = 100

/** Another process's cpu ticks (utime + stime), resident bytes and open descriptors; null when it is gone. */
const readProcess = (pid: number): { ticks: number; rss: number; fds: number } | null => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1")
    // fields after the command name (which may hold spaces), from field 3 (state) on
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    const ticks = Number(f[11]) + Number(f[12])
    const status = readFileSync(`/proc/${pid}/status`, "latin1")
    const m = /^VmRSS:\s+(\d+) kB/m.exec(status)
    let fds = 0
    try {
      fds = readdirSync(`/proc/${pid}/fd`).length
    } catch {
      // not ours to read: count none
    }
    return { ticks: Number.isFinite(ticks) ? ticks : 0, rss: m === null ? 0 : Number(m[1]) * 1024, fds }
  } catch {
    return null
  }
}

const countFds = (): number => {
  try {
    // readdir itself opens one descriptor for the directory
    return Math.max(0, readdirSync("/proc/self/fd").length - 1)
  } catch {
    return 0
  }
}
