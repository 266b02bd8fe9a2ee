/**
 * A string pool for the column decoder: every string read from a trace gets a small
 * integer id, and repeated byte sequences are recognised by a hash of their bytes
 * without creating a JS string again (the point of a specialised decoder: ~all
 * strings in a trace repeat: event names, hosts, workers, function names, keys).
 *
 * Hot path; plain imperative code on purpose.
 *
 * @since 0.1.0
 */

const textDecoder = new TextDecoder("utf-8", { fatal: false })
const CACHE_BITS = 16
const CACHE_SIZE = 1 << CACHE_BITS
const MAX_CACHED_LENGTH = 96

/**
 * Interns strings to ids; `strings[id]` is the string.
 *
 * @since 0.1.0
 * @category models
 */
export class StringPool {
  readonly strings: Array<string> = []
  readonly ids = new Map<string, number>()
  // direct-mapped cache: slot -> (bytes, id)
  private readonly cacheBytes: Array<Uint8Array | undefined> = new Array(CACHE_SIZE)
  private readonly cacheIds = new Int32Array(CACHE_SIZE)

  /** Id of a JS string. */
  intern(s: string): number {
    let id = this.ids.get(s)
    if (id === undefined) {
      id = this.strings.length
      this.strings.push(s)
      this.ids.set(s, id)
    }
    return id
  }

  /** Id of the UTF-8 string in `bytes[start..end)`. */
  internBytes(bytes: Uint8Array, start: number, end: number): number {
    const len = end - start
    if (len > MAX_CACHED_LENGTH) return this.intern(decodeUtf8(bytes, start, end))
    let h = 0x811c9dc5 ^ len
    for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i], 0x01000193)
    const slot = (h ^ (h >>> CACHE_BITS)) & (CACHE_SIZE - 1)
    const cached = this.cacheBytes[slot]
    if (cached !== undefined && cached.length === len) {
      let same = true
      for (let i = 0; i < len; i++) {
        if (cached[i] !== bytes[start + i]) {
          same = false
          break
        }
      }
      if (same) return this.cacheIds[slot]
    }
    const id = this.intern(decodeUtf8(bytes, start, end))
    this.cacheBytes[slot] = bytes.slice(start, end)
    this.cacheIds[slot] = id
    return id
  }
}

/**
 * Decode UTF-8 bytes; ASCII fast path for short strings.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeUtf8 = (bytes: Uint8Array, start: number, end: number): string => {
  if (end - start <= 64) {
    let ascii = true
    for (let i = start; i < end; i++) {
      if (bytes[i] >= 0x80) {
        ascii = false
        break
      }
    }
    if (ascii) return String.fromCharCode.apply(null, bytes.subarray(start, end) as unknown as Array<number>)
  }
  return textDecoder.decode(bytes.subarray(start, end))
}
