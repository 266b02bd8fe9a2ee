/// <reference types="@webgpu/types" preserve="true" />
/**
 * GPU devices through WebGPU (Dawn's Node binding, the `webgpu` package), and what a GPU
 * kernel sees of one.
 *
 * - `open` picks a backend and feature level by what the machine offers: Dawn's default
 *   backend (Vulkan on Linux, Metal, D3D12) with core features on a real GPU first, then
 *   its OpenGL ES backend in compatibility mode, which runs on Mesa's llvmpipe (a CPU
 *   rasteriser) where there is no GPU. It says which adapter it got (`GpuInfo`).
 * - A GPU kernel is an exported `async (ctx: TaskContext, ...args)` in a kernel module;
 *   the GPU worker (`internal/gpuWorker.ts`) calls it with the same arguments the CPU
 *   kernel of the same task gets, plus `ctx`: inputs become float32 device buffers
 *   (uploaded, or the buffer a GPU task left on the device), outputs stay on the device
 *   for the GPU tasks after it and are read back only when a CPU task or the driver
 *   needs them (`DeviceChunk`).
 *
 * Precision: WGSL has no float64. Inputs are rounded to float32 on upload, computed in
 * float32 and widened back to float64; results agree with the float64 CPU kernels within
 * float32 rounding (docs/gpu.md states the tolerance the tests use).
 *
 * Leaves out: enumerating adapters (WebGPU has no such call; a second GPU is chosen by
 * Dawn's `adapter=` name filter, `GpuOptions.adapter`), and more than 4 storage buffers
 * per shader (compatibility mode's limit).
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import type * as Chunk from "./Chunk.ts"

/**
 * Which backend: Dawn's default for the platform, or one by name (`opengl`, `vulkan`,
 * `metal`, `d3d12`).
 *
 * @since 0.1.0
 * @category models
 */
export type Backend = "default" | "vulkan" | "opengl" | "metal" | "d3d12"

/**
 * How to open a device.
 *
 * @since 0.1.0
 * @category models
 */
export interface GpuOptions {
  /** default: try the platform's default backend (core), then OpenGL (compatibility) */
  readonly backend?: Backend
  /** a substring of the adapter's name (Dawn's `adapter=` flag), to pick one of several GPUs */
  readonly adapter?: string
  /**
   * Device bytes the worker may hold (results left on the device are evicted, oldest
   * first, to stay within it); a task that needs more fails with `GpuOutOfMemory` (`EngineError`).
   * Default: the adapter's `maxBufferSize` times 4.
   */
  readonly memoryLimit?: number
}

/**
 * The adapter a GPU worker uses.
 *
 * @since 0.1.0
 * @category models
 */
export interface GpuInfo {
  readonly backend: Backend
  readonly featureLevel: "core" | "compatibility"
  /** vendor / architecture / device / description as the adapter reports them */
  readonly adapter: string
  /** true on a software rasteriser (llvmpipe, lavapipe, SwiftShader) */
  readonly software: boolean
  readonly timestampQuery: boolean
  readonly maxBufferSize: number
}

/**
 * A device and the adapter it came from.
 *
 * @since 0.1.0
 * @category models
 */
export interface Opened {
  readonly device: GPUDevice
  readonly info: GpuInfo
}

/**
 * The attempts `open` makes, in order.
 *
 * @since 0.1.0
 * @category getters
 */
export const attempts = (options: GpuOptions = {}): ReadonlyArray<{ readonly backend: Backend; readonly featureLevel: "core" | "compatibility" }> => {
  const b = options.backend
  if (b === undefined) return [{ backend: "default", featureLevel: "core" }, { backend: "opengl", featureLevel: "compatibility" }]
  return b === "opengl" ? [{ backend: b, featureLevel: "core" }, { backend: b, featureLevel: "compatibility" }] : [{ backend: b, featureLevel: "core" }]
}

const softwareName = /llvmpipe|lavapipe|swiftshader|software/i

/**
 * GPU instances of opened devices: dawn.node crashes the process (a futex error) when an
 * instance is garbage-collected while its device is in use, so they are kept for good.
 */
const instances: Array<GPU> = []

/**
 * Opens a device on the first adapter one of {@link attempts} returns, with the adapter's
 * own buffer limits; null when none does (`why` then lists each attempt). Sets
 * `EGL_PLATFORM=surfaceless` when unset, so the OpenGL backend needs no display.
 *
 * @since 0.1.0
 * @category constructors
 */
export const open = async (options: GpuOptions = {}): Promise<Opened | { readonly device: null; readonly why: string }> => {
  process.env["EGL_PLATFORM"] ??= "surfaceless"
  let webgpu: { create: (flags: Array<string>) => GPU; globals: object }
  try {
    webgpu = await import("webgpu") as never
  } catch (e) {
    return { device: null, why: `the webgpu package did not load: ${e instanceof Error ? e.message : String(e)}` }
  }
  // GPUBufferUsage and friends, which kernels use as globals
  for (const [k, v] of Object.entries(webgpu.globals)) if (!(k in globalThis)) Object.assign(globalThis, { [k]: v })
  const tried: Array<string> = []
  for (const a of attempts(options)) {
    const flags = [...(a.backend === "default" ? [] : [`backend=${a.backend}`]), ...(options.adapter !== undefined ? [`adapter=${options.adapter}`] : [])]
    const gpu = webgpu.create(flags)
    let adapter: GPUAdapter | null
    try {
      adapter = await gpu.requestAdapter({ featureLevel: a.featureLevel, powerPreference: "high-performance" } as GPURequestAdapterOptions)
    } catch (e) {
      // Dawn throws when an `adapter=` filter matches none, listing those it has
      tried.push(`${a.backend}/${a.featureLevel}: ${e instanceof Error ? e.message.replace(/\s+/g, " ").trim() : String(e)}`)
      continue
    }
    if (adapter === null) {
      tried.push(`${a.backend}/${a.featureLevel}: no adapter`)
      continue
    }
    const i = adapter.info
    const name = [i.vendor, i.architecture, i.device, i.description].filter((s) => s !== "").join(" ")
    const timestampQuery = adapter.features.has("timestamp-query")
    const device = await adapter.requestDevice({
      requiredFeatures: timestampQuery ? ["timestamp-query"] : [],
      requiredLimits: {
        maxBufferSize: adapter.limits.maxBufferSize,
        maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
        maxComputeWorkgroupsPerDimension: adapter.limits.maxComputeWorkgroupsPerDimension
      }
    })
    instances.push(gpu)
    return {
      device,
      info: {
        backend: a.backend,
        featureLevel: a.featureLevel,
        adapter: name,
        software: softwareName.test(name),
        timestampQuery,
        maxBufferSize: adapter.limits.maxBufferSize
      }
    }
  }
  return { device: null, why: tried.join("; ") }
}

/**
 * A one-line description of an adapter, for logs and the trace's metadata.
 *
 * @since 0.1.0
 * @category getters
 */
export const describe = (info: GpuInfo): string =>
  `${info.adapter} (${info.backend === "default" ? "default backend" : info.backend}, ${info.featureLevel}${info.software ? ", software" : ""})`

/**
 * Threads per workgroup of Tessera's kernels (1D): within compatibility mode's limit of
 * 128 invocations per workgroup.
 *
 * @since 0.1.0
 * @category constants
 */
export const WORKGROUP = 128

/**
 * What a GPU kernel gets besides its arguments: the device, and the transfers and
 * buffers of the task (each counted: transfers are traced, buffers against the worker's
 * memory limit).
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskContext {
  readonly device: GPUDevice
  /**
   * A float32 storage buffer holding `data`: the device copy when a GPU task of this
   * compute made it, else uploaded now (a host-to-device transfer). Float64 values are
   * rounded to float32; integers are converted (u32 when `as` says so).
   */
  input(data: Chunk.Chunk | Chunk.TypedArray | ReadonlyArray<number>, as?: "f32" | "u32"): GPUBuffer
  /** A new storage buffer of `words` 4-byte words, zeroed (throws DeviceMemoryExceeded past the limit). */
  buffer(words: number): GPUBuffer
  /** A uniform buffer holding `words` (u32 / f32 as written into the buffer by `fill`). */
  uniform(fill: (view: DataView) => void, bytes: number): GPUBuffer
  /** The compute pipeline of a WGSL module's `main` (compiled once per worker; rejects with the compiler's messages). */
  pipeline(wgsl: string): Promise<GPUComputePipeline>
  /** Runs `pipeline` over `threads` invocations (2D grid when one dimension is not enough), bindings 0.. in order. */
  dispatch(pipeline: GPUComputePipeline, bindings: ReadonlyArray<GPUBuffer>, threads: number): void
  /** Copies `words` words of `buffer` to the host (a device-to-host transfer). */
  read(buffer: GPUBuffer, words: number): Promise<ArrayBuffer>
  /**
   * The task's result as a chunk of `dtype` (default float64) from `buffer` (f32 words, i32
   * for int32). A float buffer stays on the device as this result's copy for later GPU
   * tasks; it is read back now only when a CPU task or the driver takes the result, else
   * the result is a {@link DeviceChunk} (int32 results are always read back).
   */
  chunk(buffer: GPUBuffer, shape: ReadonlyArray<number>, dtype?: "float64" | "float32" | "int32"): Promise<Chunk.Chunk | DeviceChunk>
}

/**
 * WGSL lines giving `i`, the flat invocation index of a {@link TaskContext.dispatch}
 * (which may spread over a 2D grid), in a `main` with `gid` and `nwg` builtins.
 *
 * @since 0.1.0
 * @category constants
 */
export const indexPrelude = `@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * ${WORKGROUP}u;`

/**
 * A GPU task's result that stayed on the device: what the scheduler caches in place of
 * the chunk when no CPU task and not the driver needs it (only GPU tasks on the same GPU
 * worker take it). It names the worker and the device copy; `bytes` is the size of the
 * data it stands for. A GPU kernel never sees one: the worker hands it a chunk of the
 * right shape and dtype whose `ctx.input` is the device copy.
 *
 * @since 0.1.0
 * @category models
 */
export interface DeviceChunk {
  readonly _tag: "DeviceChunk"
  /** the GPU worker holding it, and that worker's random salt (a restarted worker has another) */
  readonly worker: number
  readonly salt: number
  readonly tag: number
  readonly dtype: "float64" | "float32"
  readonly shape: ReadonlyArray<number>
  readonly bytes: number
}

/**
 * Whether a value is a {@link DeviceChunk}.
 *
 * @since 0.1.0
 * @category guards
 */
export const isDeviceChunk = (u: unknown): u is DeviceChunk =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "DeviceChunk" && typeof (u as { tag?: unknown }).tag === "number"

/**
 * What the live GPU workers of this process report (summed over them): device bytes held
 * and busy seconds, the union of their kernels' intervals: from timestamp queries where the
 * adapter has the `timestamp-query` feature (each kernel's device time, placed at its
 * submit), else from each submit to its completion (an upper bound: queueing included).
 *
 * @since 0.1.0
 * @category models
 */
export interface Usage {
  readonly devices: number
  readonly heldBytes: number
  readonly busySeconds: number
}

const usageSources = new Set<() => Usage>()

/**
 * Registers a source of {@link usage} (a worker pool with GPU workers); returns the unregister.
 *
 * @since 0.1.0
 * @category constructors
 */
export const registerUsage = (source: () => Usage): (() => void) => {
  usageSources.add(source)
  return () => void usageSources.delete(source)
}

/**
 * The GPU workers' usage in this process, null when none is live (the resource monitor's
 * GPU fields where nvidia-smi is not there).
 *
 * @since 0.1.0
 * @category getters
 */
export const usage = (): Usage | null => {
  if (usageSources.size === 0) return null
  let devices = 0
  let heldBytes = 0
  let busySeconds = 0
  for (const f of usageSources) {
    const u = f()
    devices += u.devices
    heldBytes += u.heldBytes
    busySeconds += u.busySeconds
  }
  return { devices, heldBytes, busySeconds }
}

/**
 * Thrown on a GPU worker when a task asks for more device memory than the worker may
 * hold (`TaskContext.buffer`, an upload) or the device refuses an allocation. The worker
 * reports it and the compute fails with `ComputeError` whose reason is
 * `EngineError.GpuOutOfMemory` (naming the task and kernel). Build it with
 * {@link deviceMemoryExceeded}.
 *
 * @since 0.1.0
 * @category errors
 */
export class DeviceMemoryExceeded extends Data.TaggedError("DeviceMemoryExceeded")<{
  /** bytes asked for (0: the device itself refused an allocation) */
  readonly bytes: number
  /** bytes the worker held on the device */
  readonly held: number
  /** the worker's device-memory limit */
  readonly limit: number
  readonly message: string
}> {}

/**
 * A {@link DeviceMemoryExceeded}, its message naming the bytes asked for, held and the limit.
 *
 * @since 0.1.0
 * @category constructors
 */
export const deviceMemoryExceeded = (bytes: number, held: number, limit: number, detail = ""): DeviceMemoryExceeded =>
  new DeviceMemoryExceeded({
    bytes,
    held,
    limit,
    message: `GPU out of memory: asked for ${bytes} bytes with ${held} held of a ${limit}-byte limit${detail === "" ? "" : ` (${detail})`}`
  })
