/**
 * Trace events a batch at a time, for the exports that stream (issue 32 items 9, 11):
 * an export reads its input twice (once to learn what the output's header needs —
 * argument columns, thread names, dependency slices —, once to write), holding one
 * batch of events at a time, never the whole trace. `fileBatches` decodes database files
 * with the trace layer's streaming reader (`TraceReader.streamFrames`, `EventDecoder`):
 * a truncated tail is dropped as every reader drops it, a corrupt record rejects with
 * the `TraceFormatError` naming the file and byte offset.
 *
 * @since 0.1.0
 */
import { EventDecoder, streamFrames } from "../../trace/TraceReader.ts"
import type { TraceEvent } from "../../trace/TraceEvent.ts"

/**
 * A source of events that can be read more than once: each call starts again at the
 * first event.
 *
 * @since 0.1.0
 * @category models
 */
export type EventBatches = () => AsyncIterable<ReadonlyArray<TraceEvent>>

/**
 * Bytes of records decoded at a time by `fileBatches` (some 10,000 small events): the
 * batch's events are what an export holds in memory.
 *
 * @since 0.1.0
 * @category constants
 */
export const batchBytes = 1 << 20

/**
 * The events of database files, in file order, a batch of records at a time.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fileBatches = (files: ReadonlyArray<string>, chunkBytes = batchBytes): EventBatches =>
  async function*() {
    for (const file of files) {
      const decoder = new EventDecoder()
      for await (const { bytes, end, fileOffset } of streamFrames(file, { chunkBytes })) {
        const out: Array<TraceEvent> = []
        decoder.decodeFrames(bytes, end, file, fileOffset, out)
        if (out.length > 0) yield out
      }
    }
  }

/**
 * Events already in memory as a source (one batch).
 *
 * @since 0.1.0
 * @category constructors
 */
export const arrayBatches = (events: ReadonlyArray<TraceEvent>): EventBatches =>
  async function*() {
    if (events.length > 0) yield events
  }
