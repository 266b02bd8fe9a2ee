/**
 * Checks the flatbuffers of Arrow IPC metadata (a `Message`: schema, record batch or
 * dictionary batch; a file `Footer`) before apache-arrow decodes them.
 *
 * Why: flatbuffers' JavaScript reader does not check bounds. A read past the end of the
 * buffer gives 0 or garbage instead of failing, so one changed byte can turn a vector's
 * length into billions and apache-arrow then loops over it, allocating an object per
 * element until V8 aborts (a changed footer byte took ~38 s and 4.5 GB). This is the
 * check the flatbuffers C++ `Verifier` makes, for Arrow's schemas only: every table, its
 * vtable and its fields lie inside the buffer, every vector's `length x element size`
 * and every string fit in the bytes after it, nesting is at most {@link MAX_DEPTH} deep,
 * and at most one table per 4 bytes is visited (so offsets that point back at shared
 * tables cannot make the walk grow faster than the buffer). Then decoding costs time
 * and memory in proportion to the buffer.
 *
 * Field numbers follow `format/Message.fbs`, `File.fbs` and `Schema.fbs` of the Arrow
 * specification. Only the structure is checked here; what the values mean (row counts
 * against body bytes, buffers within the body) is checked by arrow.ts on the decoded
 * message.
 *
 * @since 0.1.0
 * @internal
 */

/**
 * The flatbuffer is malformed at `at` (a byte offset inside it).
 *
 * @since 0.1.0
 * @internal
 */
export class Malformed extends Error {
  readonly at: number
  readonly problem: string
  constructor(at: number, problem: string) {
    super(`${problem} (byte ${at} of the flatbuffer)`)
    this.at = at
    this.problem = problem
  }
}

/** Deepest nesting of tables accepted (nested columns nest Field tables). */
export const MAX_DEPTH = 64

interface Ctx {
  readonly view: DataView
  readonly size: number
  budget: number
}

interface Table {
  readonly pos: number
  readonly vt: number
  readonly vtSize: number
  readonly tSize: number
}

const need = (c: Ctx, at: number, n: number, what: string): void => {
  if (at < 0 || n < 0 || at + n > c.size) throw new Malformed(at, `${what} (${n} bytes at byte ${at}) lies outside the ${c.size}-byte flatbuffer`)
}

const table = (c: Ctx, pos: number, what: string, depth: number): Table => {
  if (depth > MAX_DEPTH) throw new Malformed(pos, `tables nest deeper than ${MAX_DEPTH}`)
  if (--c.budget < 0) throw new Malformed(pos, "more tables than the flatbuffer has room for")
  need(c, pos, 4, what)
  const vt = pos - c.view.getInt32(pos, true)
  need(c, vt, 4, `${what}'s vtable`)
  const vtSize = c.view.getUint16(vt, true)
  const tSize = c.view.getUint16(vt + 2, true)
  if (vtSize < 4 || vtSize % 2 !== 0) throw new Malformed(vt, `${what}'s vtable has size ${vtSize}`)
  need(c, vt, vtSize, `${what}'s vtable`)
  if (tSize < 4) throw new Malformed(vt, `${what} has size ${tSize}`)
  need(c, pos, tSize, what)
  return { pos, vt, vtSize, tSize }
}

/** Where field `i` (of `size` bytes) lies, or undefined when absent. */
const field = (c: Ctx, t: Table, i: number, size: number, what: string): number | undefined => {
  const slot = 4 + 2 * i
  if (slot + 2 > t.vtSize) return undefined
  const off = c.view.getUint16(t.vt + slot, true)
  if (off === 0) return undefined
  if (off + size > t.tSize) throw new Malformed(t.pos + off, `${what} lies outside its table`)
  return t.pos + off
}

/** The target of the offset field `i`, or undefined when absent. */
const target = (c: Ctx, t: Table, i: number, what: string): number | undefined => {
  const at = field(c, t, i, 4, what)
  if (at === undefined) return undefined
  const to = at + c.view.getUint32(at, true)
  need(c, to, 4, what)
  return to
}

/** A vector field: where its elements start and how many there are (checked to fit). */
const vector = (c: Ctx, t: Table, i: number, elem: number, what: string): { readonly start: number; readonly length: number } | undefined => {
  const at = target(c, t, i, what)
  if (at === undefined) return undefined
  const length = c.view.getUint32(at, true)
  const room = c.size - at - 4
  if (length * elem > room) throw new Malformed(at, `${what} claims ${length} elements of ${elem} bytes, ${room} bytes follow`)
  return { start: at + 4, length }
}

const tables = (c: Ctx, t: Table, i: number, what: string, depth: number, check: (t: Table, depth: number) => void): void => {
  const v = vector(c, t, i, 4, what)
  if (v === undefined) return
  if ((c.budget -= v.length) < 0) throw new Malformed(v.start, `${what}: more tables than the flatbuffer has room for`)
  for (let j = 0; j < v.length; j++) {
    const at = v.start + 4 * j
    check(table(c, at + c.view.getUint32(at, true), `${what}[${j}]`, depth), depth)
  }
}

const child = (c: Ctx, t: Table, i: number, what: string, depth: number, check: (t: Table, depth: number) => void): void => {
  const at = target(c, t, i, what)
  if (at !== undefined) check(table(c, at, what, depth + 1), depth + 1)
}

const keyValue = (c: Ctx, t: Table): void => {
  vector(c, t, 0, 1, "metadata key")
  vector(c, t, 1, 1, "metadata value")
}

/** The union `Type` (Schema.fbs): only Timestamp (timezone) and Union (typeIds) hold offsets. */
const type = (c: Ctx, t: Table, typeId: number): void => {
  if (typeId === 10) vector(c, t, 1, 1, "timestamp timezone")
  if (typeId === 14) vector(c, t, 1, 4, "union typeIds")
}

const fieldTable = (c: Ctx, t: Table, depth: number): void => {
  vector(c, t, 0, 1, "field name")
  const typeAt = field(c, t, 2, 1, "field type id")
  const typeId = typeAt === undefined ? 0 : c.view.getUint8(typeAt)
  if (typeId > 26) throw new Malformed(typeAt!, `field type id ${typeId} is not an Arrow type`)
  child(c, t, 3, "field type", depth, (tt) => type(c, tt, typeId))
  child(c, t, 4, "field dictionary", depth, (d, dd) => child(c, d, 1, "dictionary index type", dd, () => {}))
  tables(c, t, 5, "field children", depth + 1, (f, fd) => fieldTable(c, f, fd))
  tables(c, t, 6, "field metadata", depth + 1, (kv) => keyValue(c, kv))
}

const schema = (c: Ctx, t: Table, depth: number): void => {
  tables(c, t, 1, "schema fields", depth + 1, (f, fd) => fieldTable(c, f, fd))
  tables(c, t, 2, "schema metadata", depth + 1, (kv) => keyValue(c, kv))
  vector(c, t, 3, 8, "schema features")
}

/** Buffer structs are 16 bytes, 24 before metadata V4 (a page id field since removed). */
const recordBatch = (c: Ctx, t: Table, version: number): void => {
  vector(c, t, 1, 16, "record batch field nodes")
  vector(c, t, 2, version < 3 ? 24 : 16, "record batch buffers")
  child(c, t, 3, "record batch compression", 0, () => {})
  vector(c, t, 4, 8, "record batch variadic buffer counts")
}

const context = (bytes: Uint8Array): Ctx => ({
  view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength),
  size: bytes.byteLength,
  budget: Math.floor(bytes.byteLength / 4) + 1
})

const root = (c: Ctx, what: string): Table => {
  need(c, 0, 4, `${what} root offset`)
  return table(c, c.view.getUint32(0, true), what, 0)
}

/**
 * Checks a `Message` flatbuffer (the metadata of an IPC message, without its framing).
 * Throws {@link Malformed}.
 *
 * @since 0.1.0
 * @internal
 */
export const checkMessage = (bytes: Uint8Array): void => {
  const c = context(bytes)
  const m = root(c, "message")
  const versionAt = field(c, m, 0, 2, "message version")
  const version = versionAt === undefined ? 0 : c.view.getInt16(versionAt, true)
  const kindAt = field(c, m, 1, 1, "message header type")
  const kind = kindAt === undefined ? 0 : c.view.getUint8(kindAt)
  if (kind > 5) throw new Malformed(kindAt!, `message header type ${kind} is not an Arrow message type`)
  field(c, m, 3, 8, "message body length")
  child(c, m, 2, "message header", 0, (h, depth) => {
    if (kind === 1) schema(c, h, depth)
    else if (kind === 2) child(c, h, 1, "dictionary batch data", depth, (b) => recordBatch(c, b, version))
    else if (kind === 3) recordBatch(c, h, version)
  })
  tables(c, m, 4, "message metadata", 1, (kv) => keyValue(c, kv))
}

/**
 * Checks a file `Footer` flatbuffer. Throws {@link Malformed}.
 *
 * @since 0.1.0
 * @internal
 */
export const checkFooter = (bytes: Uint8Array): void => {
  const c = context(bytes)
  const f = root(c, "footer")
  field(c, f, 0, 2, "footer version")
  child(c, f, 1, "footer schema", 0, (s, depth) => schema(c, s, depth))
  vector(c, f, 2, 24, "footer dictionary blocks")
  vector(c, f, 3, 24, "footer record batch blocks")
  tables(c, f, 4, "footer metadata", 1, (kv) => keyValue(c, kv))
}
