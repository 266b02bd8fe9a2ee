/**
 * GPU readings for the resource monitor, from `nvidia-smi`.
 *
 * One query per poll, no shell: `nvidia-smi --query-gpu=index,uuid,utilization.gpu,memory.used
 * --format=csv,noheader,nounits`, one line per GPU such as `0, GPU-5f1c…, 37, 1024`
 * (utilization in %, memory in MiB). Only the GPUs this process can see count: the
 * entries of `CUDA_VISIBLE_DEVICES` (indices or UUID prefixes) when it is set, every GPU
 * otherwise. `gpu_utilization` is their mean utilization in % (one GPU: exactly what
 * DASF records through NVML) and `gpu_memory_used` their total memory used in bytes.
 * Fields nvidia-smi cannot report (`[N/A]`, `[Not Supported]`, e.g. MIG instances) count
 * as 0.
 *
 * The query is a plain function returning the CSV text, so the parsing is tested with
 * captured output and the sampler can be given another source.
 *
 * @since 0.1.0
 * @internal
 */
import { execFile } from "node:child_process"
import { existsSync } from "node:fs"
import { delimiter, join } from "node:path"

/**
 * Where GPU readings come from: returns nvidia-smi's CSV output (the query above).
 *
 * @since 0.1.0
 * @internal
 */
export type GpuSource = () => Promise<string>

/**
 * One GPU reading: mean utilization (%) and memory used (bytes) over the visible GPUs.
 *
 * @since 0.1.0
 * @internal
 */
export interface GpuReading {
  readonly utilization: number
  readonly memoryUsed: number
  /** GPUs counted */
  readonly devices: number
}

/**
 * nvidia-smi's arguments for the query.
 *
 * @since 0.1.0
 * @internal
 */
export const nvidiaSmiArgs: ReadonlyArray<string> = [
  "--query-gpu=index,uuid,utilization.gpu,memory.used",
  "--format=csv,noheader,nounits"
]

const number = (s: string | undefined): number => {
  const v = Number(s?.trim())
  return s !== undefined && s.trim() !== "" && Number.isFinite(v) && v >= 0 ? v : 0
}

/**
 * Whether GPU `index` / `uuid` is visible under `CUDA_VISIBLE_DEVICES` = `visible`
 * (undefined: all; entries are indices or UUID prefixes, CUDA stops at an invalid one).
 */
const isVisible = (index: string, uuid: string, visible: string | undefined): boolean => {
  if (visible === undefined) return true
  for (const raw of visible.split(",")) {
    const v = raw.trim()
    if (v === "") return false
    if (/^\d+$/.test(v)) {
      if (Number(v) === Number(index)) return true
    } else if (v.startsWith("GPU-") || v.startsWith("MIG-")) {
      if (uuid.startsWith(v)) return true
    } else {
      return false
    }
  }
  return false
}

/**
 * Parses the query's output into one reading; `visible` is `CUDA_VISIBLE_DEVICES`.
 * Lines that are not `index, uuid, utilization, memory` are skipped.
 *
 * @since 0.1.0
 * @internal
 */
export const parseNvidiaSmi = (csv: string, visible: string | undefined): GpuReading => {
  let util = 0
  let mem = 0
  let devices = 0
  for (const line of csv.split(/\r?\n/)) {
    const f = line.split(",")
    if (f.length < 4 || !/^\s*\d+\s*$/.test(f[0]!)) continue
    const index = f[0]!.trim()
    const uuid = f[1]!.trim()
    if (!isVisible(index, uuid, visible)) continue
    devices++
    util += number(f[2])
    mem += number(f[3]) * 1024 * 1024 // MiB -> bytes
  }
  return { utilization: devices === 0 ? 0 : util / devices, memoryUsed: mem, devices }
}

const onPath = (cmd: string): string | undefined => {
  for (const d of (process.env.PATH ?? "").split(delimiter)) {
    if (d !== "" && existsSync(join(d, cmd))) return join(d, cmd)
  }
  return undefined
}

/**
 * The nvidia-smi source when `nvidia-smi` is on PATH, otherwise null (no GPU: the
 * fields stay 0). Each call runs the query (5 s timeout).
 *
 * @since 0.1.0
 * @internal
 */
export const nvidiaSmi = (): GpuSource | null => {
  const exe = onPath("nvidia-smi")
  if (exe === undefined) return null
  return () =>
    new Promise((resolve, reject) => {
      execFile(exe, nvidiaSmiArgs, { timeout: 5000, encoding: "utf8" }, (error, stdout) => {
        if (error !== null) reject(error)
        else resolve(stdout)
      })
    })
}
