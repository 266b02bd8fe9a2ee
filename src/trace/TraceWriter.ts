/**
 * The specialised writer of trace records for the profiler's write path. It writes
 * exactly the bytes `TraceFormat.encodeRecords` writes (property tests check byte
 * equality), several times faster for the shapes the profiler records:
 *
 * - one growing buffer reused between batches, msgpack primitives and the 8-byte
 *   framing from the one `MsgpackWriter` (shared with `TraceFormat.encodeRecords`);
 * - the short strings of repeated positions (event names, hosts, thread ids, arg keys)
 *   cached as msgpack bytes;
 * - the Trace layer's `Compute` and `Managed Memory` records written straight from
 *   the engine's records (`ComputeRecord`, `ManagedMemoryRecord`: the fields the
 *   format needs, so this layer imports no other), without building event objects. A
 *   task without a name of its own gets `keySplit(key)` as `args.name`, the rule the
 *   analysis uses when reading.
 *
 * Leaves out: batching, files and appending (src/profiler/FileDatabase.ts), reading
 * (`TraceReader.ts`).
 *
 * @since 0.1.0
 */
export {
  /**
   * A reusable record encoder: records are appended to `buf[0..pos)` until the owner
   * takes the bytes and resets `pos`.
   *
   * @since 0.1.0
   * @category encoding
   */
  RecordEncoder,
  /** @since 0.1.0 @category models */
  type ComputeRecord,
  /** @since 0.1.0 @category models */
  type DriverSegmentRecord,
  /** @since 0.1.0 @category models */
  type ManagedMemoryRecord
} from "./internal/recordEncoder.ts"
