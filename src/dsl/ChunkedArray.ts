/**
 * ChunkedArray: a lazy, typed, row-chunked numeric array. Operations never compute;
 * they add tasks to a graph (one task per chunk, tree reductions for reductions), and
 * `compute` / `persist` hand that graph to the engine. dtype and shape are tracked, and
 * checked before anything runs.
 *
 * A block is either a task of the graph or a persisted chunk: persisted chunks live in
 * shared memory, so later graphs take them as plain arguments and no worker copies them.
 *
 * Memory: `compute` and `persist` first check what they will keep (the rows still to be
 * computed, times row bytes; `compute` also the concatenated copy) against the memory
 * the executor reports available, and fail with a `DslError` (`OutOfMemory`) before any
 * task runs when it does not fit.
 *
 * Kernel outputs: every task that makes a block declares it (`TaskSpec.output`: a Chunk
 * of the array's dtype, the block's rows and the array's columns), and the engine checks
 * what the kernel returned against it on the thread that ran it: a kernel returning half
 * the rows, another dtype or not a chunk fails its task (`BadOutput`) instead of leaving
 * rows never written.
 *
 * Pure: no I/O, no threads; kernels are referenced by module URL + export name.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import * as Chunk from "../engine/Chunk.ts"
import * as Engine from "../engine/Engine.ts"
import type { ComputeError, GraphError } from "../engine/EngineError.ts"
import { Executor } from "../engine/Executor.ts"
import * as Kernel from "../engine/Kernel.ts"
import * as Lineage from "../engine/Lineage.ts"
import * as TaskGraph from "../engine/TaskGraph.ts"
import { DslError } from "./DslError.ts"

/**
 * One row chunk: a task of the graph, or a chunk already computed and kept.
 *
 * @since 0.1.0
 * @category models
 */
export type Block =
  | { readonly _tag: "Task"; readonly key: string }
  | { readonly _tag: "Value"; readonly chunk: Chunk.Chunk }

/**
 * A lazy row-chunked array of `dtype` with `shape` = [rows] or [rows, columns].
 *
 * @since 0.1.0
 * @category models
 */
export interface ChunkedArray<D extends Chunk.DType = Chunk.DType> {
  readonly _tag: "ChunkedArray"
  readonly dtype: D
  readonly shape: ReadonlyArray<number>
  readonly chunkRows: ReadonlyArray<number>
  readonly blocks: ReadonlyArray<Block>
  /** every task the blocks need, upstream included */
  readonly specs: ReadonlyMap<string, TaskGraph.TaskSpec>
}

/**
 * A lazy single value (the result of a reduction), computed by one task.
 *
 * @since 0.1.0
 * @category models
 */
export interface Delayed<A> {
  readonly _tag: "Delayed"
  readonly key: string
  readonly specs: ReadonlyMap<string, TaskGraph.TaskSpec>
  readonly _A?: (_: never) => A
}

let counter = 0
/**
 * A fresh dask-style token for a task name: `name-<8 hex>`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const token = (name: string): string => {
  counter = (counter + 1) >>> 0
  let h = (counter * 0x9e3779b1) >>> 0
  h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d) >>> 0
  return `${name}-${h.toString(16).padStart(8, "0")}`
}

/** dask's chunk key: the stringified tuple `('name-token', i)`. */
const blockKey = (tok: string, i: number): string => `('${tok}', ${i})`

/**
 * An array whose chunks are made by tasks: `make(i)` gives chunk i's kernel and args.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromTasks = <D extends Chunk.DType>(options: {
  readonly name: string
  readonly dtype: D
  readonly shape: ReadonlyArray<number>
  readonly chunkRows: ReadonlyArray<number>
  readonly kernel: Kernel.KernelRef
  readonly args: (i: number, rowStart: number, rows: number) => ReadonlyArray<unknown>
  readonly stage?: string
}): ChunkedArray<D> => {
  const tok = token(options.name)
  const specs = new Map<string, TaskGraph.TaskSpec>()
  const blocks: Array<Block> = []
  let rowStart = 0
  const tail = options.shape.slice(1)
  options.chunkRows.forEach((rows, i) => {
    const key = blockKey(tok, i)
    specs.set(key, spec(key, options.name, options.kernel, options.args(i, rowStart, rows), options.stage, { dtype: options.dtype, shape: [rows, ...tail] }))
    blocks.push({ _tag: "Task", key })
    rowStart += rows
  })
  return { _tag: "ChunkedArray", dtype: options.dtype, shape: options.shape, chunkRows: options.chunkRows, blocks, specs }
}

/**
 * An array over chunks already in memory (no task makes them).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromChunks = <D extends Chunk.DType>(dtype: D, chunks: ReadonlyArray<Chunk.Chunk>): ChunkedArray<D> => {
  const first = chunks[0]
  const tail = first ? first.shape.slice(1) : []
  for (const c of chunks) {
    if (c.dtype !== dtype) throw DslError.dtypeMismatch("fromChunks", dtype, c.dtype)
    if (c.shape.slice(1).join() !== tail.join()) throw DslError.shapeMismatch("fromChunks", first!.shape, c.shape)
  }
  const chunkRows = chunks.map((c) => c.shape[0]!)
  return {
    _tag: "ChunkedArray",
    dtype,
    shape: [chunkRows.reduce((a, b) => a + b, 0), ...tail],
    chunkRows,
    blocks: chunks.map((chunk) => ({ _tag: "Value", chunk })),
    specs: new Map()
  }
}

/**
 * Splits `n` rows into chunks of at most `rows` rows.
 *
 * @since 0.1.0
 * @category constructors
 */
export const splitRows = (n: number, rows: number): Array<number> => {
  if (!(rows >= 1)) throw DslError.invalidOption("chunks", `chunk rows must be >= 1, got ${rows}`)
  const out: Array<number> = []
  for (let s = 0; s < n; s += rows) out.push(Math.min(rows, n - s))
  return out
}

const spec = (
  key: string,
  name: string,
  kernel: Kernel.KernelRef,
  args: ReadonlyArray<unknown>,
  stage: string | undefined,
  output?: TaskGraph.TaskOutput
): TaskGraph.TaskSpec => {
  const s: { -readonly [K in keyof TaskGraph.TaskSpec]: TaskGraph.TaskSpec[K] } = { key, name, kernel, args }
  if (stage !== undefined) s.stage = stage
  if (output !== undefined) s.output = output
  return s
}

const dtypes: ReadonlyArray<string> = ["float32", "float64", "int32", "int64", "uint8"]

/** The dtype and columns a block operation declares, checked before any task is made. */
const checkDeclared = (where: string, dtype: unknown, columns?: unknown): void => {
  if (typeof dtype !== "string" || !dtypes.includes(dtype)) {
    throw DslError.invalidOption("dtype", `stage "${where}": dtype ${JSON.stringify(dtype)} is not one of ${dtypes.join(", ")}`)
  }
  if (columns !== undefined && !(typeof columns === "number" && Number.isInteger(columns) && columns >= 1)) {
    throw DslError.invalidOption("columns", `stage "${where}": columns must be an integer >= 1, got ${JSON.stringify(columns)}`)
  }
}

/** The argument that stands for a block in a task: a ref to its task, or the chunk itself. */
export const blockArg = (b: Block): unknown => (b._tag === "Task" ? TaskGraph.ref(b.key) : b.chunk)

/**
 * Applies a chunk kernel to every block: `kernel(block, ...extra)` must return a chunk
 * (`{ dtype, shape, data }`) of `dtype` with the block's rows and `columns` columns
 * (absent: 1-D, shape `[rows]`); anything else fails the task with `BadOutput`, naming
 * the task, the kernel, what was declared and what came back.
 *
 * A 1-D input with `columns` (a kernel that adds a column axis) needs `newAxis: true`, as
 * dask's `map_blocks(new_axis=…)`: without it, `columns` on a 1-D input is taken for a
 * mistake and is a `DslError` (ShapeMismatch) naming the stage.
 *
 * @since 0.1.0
 * @category combinators
 */
export const mapBlocks = <D extends Chunk.DType>(
  self: ChunkedArray,
  options: {
    readonly name: string
    readonly kernel: Kernel.KernelRef
    readonly extra?: ReadonlyArray<unknown>
    readonly dtype: D
    readonly columns?: number
    /** the kernel turns a 1-D block into a 2-D one (`columns` columns) */
    readonly newAxis?: boolean
    readonly stage?: string
  }
): ChunkedArray<D> => {
  const where = options.stage ?? options.name
  checkDeclared(where, options.dtype, options.columns)
  if (options.columns !== undefined && self.shape.length < 2 && options.newAxis !== true) {
    throw DslError.shapeMismatch(where, ["n", options.columns], self.shape, `columns: ${options.columns} declares a 2-D output for a 1-D input; drop columns, or pass newAxis: true if the kernel adds a column axis`)
  }
  const tok = token(options.name)
  const specs = new Map(self.specs)
  const blocks = self.blocks.map((b, i): Block => {
    const key = blockKey(tok, i)
    const rows = self.chunkRows[i]!
    const output = { dtype: options.dtype, shape: options.columns === undefined ? [rows] : [rows, options.columns] }
    specs.set(key, spec(key, options.name, options.kernel, [blockArg(b), ...(options.extra ?? [])], options.stage, output))
    return { _tag: "Task", key }
  })
  const shape = options.columns === undefined ? [self.shape[0]!] : [self.shape[0]!, options.columns]
  return { _tag: "ChunkedArray", dtype: options.dtype, shape, chunkRows: self.chunkRows, blocks, specs }
}

/**
 * Applies a kernel to the matching blocks of two arrays of the same chunking:
 * `kernel(selfBlock, ...extra, otherBlock)`; the output has `self`'s shape unless
 * `columns` says otherwise. The caller checks that the chunkings agree.
 *
 * @since 0.1.0
 * @category combinators
 */
export const zipBlocks = <D extends Chunk.DType>(
  self: ChunkedArray,
  other: ChunkedArray,
  options: {
    readonly name: string
    readonly kernel: Kernel.KernelRef
    readonly extra?: ReadonlyArray<unknown>
    readonly dtype: D
    readonly stage?: string
  }
): ChunkedArray<D> => {
  if (self.chunkRows.join() !== other.chunkRows.join()) {
    throw DslError.chunksMismatch(options.stage ?? options.name, self.chunkRows, other.chunkRows)
  }
  checkDeclared(options.stage ?? options.name, options.dtype)
  const tok = token(options.name)
  const specs = new Map([...self.specs, ...other.specs])
  const tail = self.shape.slice(1)
  const blocks = self.blocks.map((b, i): Block => {
    const key = blockKey(tok, i)
    const output = { dtype: options.dtype, shape: [self.chunkRows[i]!, ...tail] }
    specs.set(key, spec(key, options.name, options.kernel, [blockArg(b), ...(options.extra ?? []), blockArg(other.blocks[i]!)], options.stage, output))
    return { _tag: "Task", key }
  })
  return { _tag: "ChunkedArray", dtype: options.dtype, shape: self.shape, chunkRows: self.chunkRows, blocks, specs }
}

/**
 * Checks that `self` has `columns` columns (2-D) before a stage uses it.
 *
 * @since 0.1.0
 * @category guards
 */
export const expectColumns = (self: ChunkedArray, columns: number, stage: string): void => {
  if (self.shape.length !== 2 || self.shape[1] !== columns) {
    throw DslError.shapeMismatch(stage, ["n", columns], self.shape)
  }
}

/**
 * Checks that `self` holds `dtype` before a stage uses it (a cast, an untyped dataset or
 * `any` can get past the type).
 *
 * @since 0.1.0
 * @category guards
 */
export const expectDType = (self: ChunkedArray, dtype: Chunk.DType, stage: string): void => {
  if (self.dtype !== dtype) throw DslError.dtypeMismatch(stage, dtype, self.dtype)
}

/**
 * Reduces the blocks with `partial` per block then `combine` over groups of at most
 * `fanIn` results, level by level, to one task (a tree reduction).
 *
 * @since 0.1.0
 * @category combinators
 */
export const treeReduce = <A>(
  self: ChunkedArray,
  options: {
    readonly name: string
    readonly partial: Kernel.KernelRef
    readonly extra?: ReadonlyArray<unknown>
    readonly combine: Kernel.KernelRef
    readonly fanIn?: number
    readonly stage?: string
  }
): Delayed<A> => {
  const fanIn = Math.max(2, options.fanIn ?? 8)
  const tok = token(options.name)
  const specs = new Map(self.specs)
  let level: Array<string> = self.blocks.map((b, i) => {
    const key = `('${tok}', 0, ${i})`
    specs.set(key, spec(key, options.name, options.partial, [blockArg(b), ...(options.extra ?? [])], options.stage))
    return key
  })
  const combineName = `${options.name}-combine`
  for (let depth = 1; level.length > 1 || depth === 1; depth++) {
    const next: Array<string> = []
    for (let g = 0; g < level.length; g += fanIn) {
      const key = `('${tok}-combine', ${depth}, ${g / fanIn})`
      specs.set(key, spec(key, combineName, options.combine, [TaskGraph.refs(level.slice(g, g + fanIn))], options.stage))
      next.push(key)
    }
    level = next
  }
  return { _tag: "Delayed", key: level[0]!, specs }
}

/**
 * Bytes of the rows of `self` that are not yet in memory (pending task blocks), as
 * computed chunks: rows x row bytes (columns x dtype size).
 *
 * @since 0.1.0
 * @category getters
 */
export const pendingBytes = (self: ChunkedArray): number => {
  let rows = 0
  self.blocks.forEach((b, i) => {
    if (b._tag === "Task") rows += self.chunkRows[i]!
  })
  return rows * rowBytes(self)
}

/**
 * Bytes of the whole array as computed chunks: rows x row bytes.
 *
 * @since 0.1.0
 * @category getters
 */
export const nbytes = (self: ChunkedArray): number => (self.shape[0] ?? 1) * rowBytes(self)

const rowBytes = (self: ChunkedArray): number => self.shape.slice(1).reduce((a, b) => a * b, 1) * Chunk.itemSize(self.dtype)

/**
 * Fails with `OutOfMemory` when `needed` bytes exceed what the executor reports
 * available (executors that report nothing are not checked).
 *
 * @since 0.1.0
 * @category combinators
 */
export const checkMemory = (stage: string, what: string, needed: number): Effect.Effect<void, DslError, Executor> =>
  Effect.gen(function*() {
    const available = (yield* Executor).availableMemory?.()
    if (available !== undefined && needed > available) return yield* Effect.fail(DslError.outOfMemory(stage, what, needed, available))
  })

const describeArray = (self: ChunkedArray): string => `${/^[aeio]/.test(self.dtype) ? "an" : "a"} ${self.dtype} [${self.shape.join(", ")}] array`

/**
 * Computes every block and concatenates them into one chunk in this thread.
 *
 * @since 0.1.0
 * @category combinators
 */
export const compute = <D extends Chunk.DType>(
  self: ChunkedArray<D>,
  stage = "compute"
): Effect.Effect<Chunk.Chunk, ComputeError | GraphError | DslError, Executor> =>
  Effect.andThen(
    // the chunks still to compute, and the one chunk they are copied into
    checkMemory(stage, `computing ${describeArray(self)} into one chunk`, pendingBytes(self) + nbytes(self)),
    Effect.map(persistedChunks(self), (chunks) => concat(self, chunks))
  )

/**
 * Computes every block and keeps the chunks (in shared memory): the result's blocks are
 * values, so later operations do not recompute them.
 *
 * @since 0.1.0
 * @category combinators
 */
export const persist = <D extends Chunk.DType>(
  self: ChunkedArray<D>,
  stage = "persist"
): Effect.Effect<ChunkedArray<D>, ComputeError | GraphError | DslError, Executor> =>
  Effect.andThen(
    checkMemory(stage, `persisting ${describeArray(self)}`, pendingBytes(self)),
    Effect.map(persistedChunks(self), (chunks) => ({
      ...self,
      blocks: chunks.map((chunk): Block => ({ _tag: "Value", chunk })),
      specs: new Map()
    }))
  )

/**
 * `self` when every block is already in memory, else {@link persist}: for algorithms that
 * read their input more than once (each pass would otherwise recompute it).
 *
 * @since 0.1.0
 * @category combinators
 */
export const ensurePersisted = <D extends Chunk.DType>(
  self: ChunkedArray<D>,
  stage = "persist"
): Effect.Effect<ChunkedArray<D>, ComputeError | GraphError | DslError, Executor> =>
  self.blocks.every((b) => b._tag === "Value") ? Effect.succeed(self) : persist(self, stage)

/**
 * Computes a delayed value.
 *
 * @since 0.1.0
 * @category combinators
 */
export const computeDelayed = <A>(self: Delayed<A>): Effect.Effect<A, ComputeError | GraphError, Executor> =>
  Effect.gen(function*() {
    const graph = yield* TaskGraph.make([...self.specs.values()])
    const out = yield* Engine.compute(graph, { keys: [self.key] })
    return out.get(self.key) as A
  })

const persistedChunks = (self: ChunkedArray): Effect.Effect<Array<Chunk.Chunk>, ComputeError | GraphError, Executor> =>
  Effect.gen(function*() {
    const keys = self.blocks.flatMap((b) => (b._tag === "Task" ? [b.key] : []))
    const results = keys.length === 0
      ? new Map<string, unknown>()
      : yield* Effect.flatMap(TaskGraph.make([...self.specs.values()]), (g) => Engine.compute(g, { keys }))
    return self.blocks.map((b) => (b._tag === "Value" ? b.chunk : (results.get(b.key) as Chunk.Chunk)))
  })

const concat = (self: ChunkedArray, chunks: ReadonlyArray<Chunk.Chunk>): Chunk.Chunk => {
  const out = Chunk.allocShared(self.dtype, self.shape)
  let o = 0
  for (const c of chunks) {
    out.data.set(c.data as never, o)
    o += c.data.length
  }
  return Lineage.derive(out, ...chunks)
}

/**
 * Reference to a kernel in one of Tessera's kernel modules (`src/kernels/<module>.ts`, or `.js` in the compiled package).
 *
 * @since 0.1.0
 * @category constructors
 */
export const kernel = (module: string, name: string): Kernel.KernelRef =>
  Kernel.ref(Kernel.sibling(import.meta.url, `../kernels/${module}`).href, name)

/**
 * Runs a kernel on every block and returns the per-block results, in block order.
 *
 * @since 0.1.0
 * @category combinators
 */
export const mapToValues = <A>(
  self: ChunkedArray,
  options: { readonly name: string; readonly kernel: Kernel.KernelRef; readonly extra?: ReadonlyArray<unknown>; readonly stage?: string }
): Effect.Effect<Array<A>, ComputeError | GraphError, Executor> =>
  Effect.gen(function*() {
    const tok = token(options.name)
    const specs = new Map(self.specs)
    const keys = self.blocks.map((b, i) => {
      const key = blockKey(tok, i)
      specs.set(key, spec(key, options.name, options.kernel, [blockArg(b), ...(options.extra ?? [])], options.stage))
      return key
    })
    const graph = yield* TaskGraph.make([...specs.values()])
    const out = yield* Engine.compute(graph, { keys })
    return keys.map((k) => out.get(k) as A)
  })
