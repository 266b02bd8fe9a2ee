/**
 * The specialised readers of trace records: one framing (`TraceFormat`), one string
 * interner (`StringPool`, strings recognised by their UTF-8 bytes), two sinks.
 *
 * - `EventDecoder` turns records into `TraceEvent` objects: the profiler's read API
 *   (`FileDatabase.read`, `streamBatches`).
 * - `ColumnDecoder` turns them into typed columns (string ids into its `StringPool`,
 *   float64 numbers): `Compute`, `Managed Memory` and `Resource Usage` rows, plus the
 *   metadata events (`Pipeline Graph`) kept whole. The analysis loader builds its Arrow
 *   tables from these, on worker threads for large loads (pools move between threads
 *   as typed arrays, `StringPool.parts` / `fromParts`).
 *
 * Both decode exactly what the generic decoder (`TraceFormat.decodeEventUnsafe`)
 * decodes, and hand any record they do not handle to it, so there is one error path
 * (`TraceFormatError`, with file and byte offset). Neither validates records through a
 * Schema: they are the hot path (1M+ records a second); property tests check them
 * against the generic decoder instead.
 *
 * This module and the ones it loads import neither the Effect runtime nor Arrow, so
 * the loader's worker threads start fast.
 *
 * @since 0.1.0
 */
export {
  /**
   * Decodes records into `TraceEvent` objects (`decodeFrames`).
   *
   * @since 0.1.0
   * @category encoding
   */
  EventDecoder
} from "./internal/eventDecoder.ts"
export {
  /**
   * Decodes records into the raw columns of the three tables and the metadata events
   * (`decodeFrames`); its `pool` holds every string.
   *
   * @since 0.1.0
   * @category encoding
   */
  ColumnDecoder,
  /** @since 0.1.0 @category models */
  type ArgSkip
} from "./internal/columnDecoder.ts"
export {
  /** @since 0.1.0 @category models */
  StringPool,
  /** @since 0.1.0 @category models */
  type StringPoolParts
} from "./internal/stringPool.ts"
export {
  /** @since 0.1.0 @category models */
  F64,
  /** @since 0.1.0 @category models */
  I32,
  /** @since 0.1.0 @category models */
  MemoryColumns,
  /** @since 0.1.0 @category models */
  phaseNames,
  /** @since 0.1.0 @category models */
  resourceArgs,
  /** @since 0.1.0 @category models */
  ResourceColumns,
  /** @since 0.1.0 @category models */
  shapeText,
  /** @since 0.1.0 @category models */
  DecodedTaskColumns
} from "./internal/columns.ts"
export {
  /**
   * Stream a database file as batches of whole records (`TraceFormat.streamFrames`),
   * here for readers that load no Effect.
   *
   * @since 0.1.0
   * @category encoding
   */
  streamFrames,
  /**
   * Where a record begins near a byte offset of a file (`TraceFormat.recordStartNear`),
   * here for readers that load no Effect.
   *
   * @since 0.1.0
   * @category encoding
   */
  recordStartNear
} from "./internal/streaming.ts"
