/**
 * DASF's reader, as tests check it: `FileDatabase.get_traces` builds
 * `event_classes[phase](**record)` for every record, so only phases X, I, B, E and only
 * the keys of that phase's dataclass pass.
 */
import { decode } from "@msgpack/msgpack"
import assert from "node:assert/strict"
import { readFileSync } from "node:fs"

/** The keys of DASF's event dataclasses (dasf/profile/profiler.py), per phase. */
const dasfKeys: Record<string, ReadonlyArray<string>> = {
  X: ["name", "timestamp", "duration", "phase", "process_id", "thread_id", "args"],
  I: ["name", "timestamp", "phase", "scope", "process_id", "thread_id", "args"],
  B: ["name", "timestamp", "phase", "process_id", "thread_id", "args"],
  E: ["name", "timestamp", "phase", "process_id", "thread_id", "args"]
}

/** Every record of a file as the raw msgpack map (generic decoder, as DASF's ormsgpack). */
export const rawRecords = (file: string): Array<Record<string, unknown>> => {
  const bytes = readFileSync(file)
  const out: Array<Record<string, unknown>> = []
  let at = 0
  while (at < bytes.length) {
    const n = Number(bytes.readBigUInt64BE(at))
    out.push(decode(bytes.subarray(at + 8, at + 8 + n)) as Record<string, unknown>)
    at += 8 + n
  }
  assert.equal(at, bytes.length)
  return out
}

/** What DASF's `get_traces` would do with the record: fail unless the phase and keys fit. */
export const assertDasfReadable = (r: Record<string, unknown>, file: string): void => {
  const keys = dasfKeys[r.phase as string]
  assert.ok(keys !== undefined, `${file}: ${String(r.name)} has phase ${String(r.phase)} (DASF: KeyError)`)
  for (const k of Object.keys(r)) assert.ok(keys.includes(k), `${file}: ${String(r.name)} (${String(r.phase)}) has key ${k}`)
  for (const k of ["name", "timestamp"]) assert.ok(k in r, `${file}: record without ${k}`)
  if (r.phase === "X") assert.equal(typeof r.duration, "number")
}

