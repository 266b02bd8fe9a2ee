/**
 * How the cluster's links are secured: every listener and every connection of the
 * scheduler's registry, the workers' runner sockets and their data planes takes one
 * `LinkSecurity`.
 *
 * - `plain`: TCP as it is. The default where every address is loopback (`--cluster
 *   local:N`, a scheduler on 127.0.0.1): the machine's own processes are trusted, as with
 *   dask's `LocalCluster`, and the links cost nothing extra.
 * - `tls`: TLS 1.3 with an external pre-shared key derived from the cluster's token
 *   (`tessera-token-v1:` + 43 base64url characters, 256 random bits). Both ends prove the
 *   key inside the handshake (RFC 8446's psk_dhe_ke: the key authenticates, an ECDHE
 *   exchange gives forward secrecy), so a peer without it fails the handshake in OpenSSL
 *   and not one byte of it reaches a Tessera decoder. Chosen over certificates derived
 *   from the secret (Node has no API to make a certificate; a library or `openssl` would
 *   be needed on every host) and over TLS plus a token message (the token would then
 *   travel to whichever server answered, and the server side could not be checked without
 *   pinning a certificate). The cipher is AES-128-GCM (AES-NI), the PSK's hash SHA-256.
 *
 * A listener bound beyond loopback without a token refuses to start unless `insecure` is
 * set, which says so on every start (`decide`).
 *
 * The token is never logged, written to a trace or shown in a process title: it travels
 * in files (`--token-file`, created 0600) and the `TESSERA_CLUSTER_TOKEN` environment
 * variable (how a driver hands it to its local workers), and is held as a `Redacted`.
 *
 * @since 0.1.0
 * @internal
 */
import { Redacted } from "effect"
import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from "node:crypto"
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { dirname } from "node:path"
import type * as Tls from "node:tls"
import { isLoopbackHost as isLoopback } from "../../Cluster.ts"

export { isLoopback }

/**
 * The environment variable holding a cluster token (how a driver passes it to the worker
 * processes it starts; users may set it instead of `--token-file`).
 *
 * @since 0.1.0
 * @internal
 */
export const TOKEN_ENV = "TESSERA_CLUSTER_TOKEN"

const PREFIX = "tessera-token-v1:"

/**
 * A link's security: plain TCP, or TLS 1.3 keyed by the cluster token.
 *
 * @since 0.1.0
 * @internal
 */
export type LinkSecurity =
  | { readonly _tag: "plain"; readonly insecure: boolean }
  | { readonly _tag: "tls"; readonly token: Redacted.Redacted<string> }

/** @internal */
export const plain: LinkSecurity = { _tag: "plain", insecure: false }

/**
 * A fresh token: 256 random bits.
 *
 * @since 0.1.0
 * @internal
 */
export const newToken = (): string => PREFIX + randomBytes(32).toString("base64url")

/**
 * Why `text` is not a token, or undefined. Whitespace around it (a file's final newline)
 * is ignored by `tokenOf`.
 *
 * @since 0.1.0
 * @internal
 */
export const tokenProblem = (text: string): string | undefined => {
  const t = text.trim()
  if (!t.startsWith(PREFIX)) return `a cluster token starts with "${PREFIX}" (make one with tessera scheduler --token-file PATH)`
  const body = t.slice(PREFIX.length)
  if (!/^[A-Za-z0-9_-]{43}$/.test(body)) return `a cluster token has 43 base64url characters after "${PREFIX}"`
  return undefined
}

/**
 * Reads a token file: its problem (missing, not a token, readable by others) or the token.
 *
 * @since 0.1.0
 * @internal
 */
export const readTokenFile = (path: string): { readonly token: Redacted.Redacted<string> } | { readonly problem: string } => {
  let text: string
  try {
    const st = statSync(path)
    if (!st.isFile()) return { problem: `${path} is not a file` }
    if (process.platform !== "win32" && (st.mode & 0o077) !== 0) {
      return { problem: `${path} can be read by other users (mode ${(st.mode & 0o777).toString(8)}); chmod 600 ${path}` }
    }
    if (st.size > 4096) return { problem: `${path} is ${st.size} bytes, not a cluster token` }
    text = readFileSync(path, "utf8")
  } catch (e) {
    return { problem: `cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}` }
  }
  const why = tokenProblem(text)
  return why !== undefined ? { problem: `${path}: ${why}` } : { token: Redacted.make(text.trim()) }
}

/**
 * Writes a fresh token to `path` (mode 0600, its folder made 0700 if missing); fails where
 * the file exists.
 *
 * @since 0.1.0
 * @internal
 */
export const writeTokenFile = (path: string): Redacted.Redacted<string> => {
  const token = newToken()
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  writeFileSync(path, token + "\n", { mode: 0o600, flag: "wx" })
  chmodSync(path, 0o600)
  return Redacted.make(token)
}

/**
 * The token in the environment (`TESSERA_CLUSTER_TOKEN`), its problem, or nothing.
 *
 * @since 0.1.0
 * @internal
 */
export const tokenFromEnv = (): { readonly token: Redacted.Redacted<string> } | { readonly problem: string } | undefined => {
  const v = process.env[TOKEN_ENV]
  if (v === undefined || v === "") return undefined
  const why = tokenProblem(v)
  return why !== undefined ? { problem: `${TOKEN_ENV}: ${why}` } : { token: Redacted.make(v.trim()) }
}

/**
 * The security of a process's links: TLS where a token is given; else plain where every
 * host it listens on or connects to is loopback, or `insecure` is set; else the sentence
 * saying what is missing.
 *
 * @since 0.1.0
 * @internal
 */
export const decide = (o: {
  readonly hosts: ReadonlyArray<string>
  readonly token?: Redacted.Redacted<string> | undefined
  readonly insecure?: boolean | undefined
}): LinkSecurity | { readonly problem: string } => {
  if (o.token !== undefined) return { _tag: "tls", token: o.token }
  const outside = o.hosts.filter((h) => !isLoopback(h))
  if (outside.length === 0) return plain
  if (o.insecure === true) return { _tag: "plain", insecure: true }
  return {
    problem: `${outside[0]} is not a loopback address: links beyond this machine need the cluster's token (--token-file PATH or ${TOKEN_ENV}), or --insecure for plain TCP that anyone who reaches the port can use`
  }
}

/** the PSK identity both ends name (a version, so a later scheme can coexist) */
const IDENTITY = "tessera-cluster-v1"

/** the TLS key: HKDF-SHA256 of the token, never the token itself */
const pskOf = (token: Redacted.Redacted<string>): Buffer =>
  Buffer.from(hkdfSync("sha256", Buffer.from(Redacted.value(token), "utf8"), Buffer.alloc(0), "tessera cluster psk v1", 32))

/** TLS 1.3 only, both ends; a PSK made with SHA-256 admits only the SHA-256 suites */
const TLS13 = {
  minVersion: "TLSv1.3",
  maxVersion: "TLSv1.3",
  ciphers: "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256"
} as const

/**
 * Seconds a connection may take to prove the token before it is closed.
 *
 * @since 0.1.0
 * @internal
 */
export const HANDSHAKE_SECONDS = 10

/**
 * Options of a TLS server keyed by the token (no certificate: the PSK authenticates).
 *
 * @since 0.1.0
 * @internal
 */
export const serverTls = (token: Redacted.Redacted<string>): Tls.TlsOptions => {
  const psk = pskOf(token)
  return {
    ...TLS13,
    handshakeTimeout: HANDSHAKE_SECONDS * 1000,
    pskCallback: (_socket, identity) => {
      if (identity.length !== IDENTITY.length) return null
      return timingSafeEqual(Buffer.from(identity), Buffer.from(IDENTITY)) ? psk : null
    }
  }
}

/**
 * Options of a TLS connection keyed by the token. The server is authenticated by the
 * PSK, not by a certificate, so the host-name check is off.
 *
 * @since 0.1.0
 * @internal
 */
export const clientTls = (token: Redacted.Redacted<string>): Tls.ConnectionOptions => {
  const psk = pskOf(token)
  return {
    ...TLS13,
    checkServerIdentity: () => undefined,
    pskCallback: () => ({ psk, identity: IDENTITY })
  }
}

/**
 * A short fingerprint of the token (8 hex characters of an HMAC), to tell two clusters'
 * tokens apart in a message without showing either.
 *
 * @since 0.1.0
 * @internal
 */
export const fingerprint = (token: Redacted.Redacted<string>): string =>
  createHmac("sha256", Redacted.value(token)).update("tessera fingerprint").digest("hex").slice(0, 8)

/**
 * Counts refused connections and says so on `log` at most once per `everySeconds`:
 * `refused 1,000 connections on the registry port in the last 10 s (312 from
 * 10.0.0.9: handshake failed; …)`. Bounded: at most 8 addresses and reasons are named.
 *
 * @since 0.1.0
 * @internal
 */
export class RefusalLog {
  private count = 0
  private readonly by = new Map<string, number>()
  private timer: ReturnType<typeof setTimeout> | undefined

  private readonly what: string
  private readonly log: (line: string) => void
  private readonly everySeconds: number

  constructor(what: string, log: (line: string) => void, everySeconds = 10) {
    this.what = what
    this.log = log
    this.everySeconds = everySeconds
  }

  refuse(from: string, why: string): void {
    this.count++
    const k = `${from}: ${why}`
    if (this.by.size < 8 || this.by.has(k)) this.by.set(k, (this.by.get(k) ?? 0) + 1)
    if (this.timer === undefined) {
      // the first refusal is said at once, the rest summed up when the period ends
      this.flush()
      this.timer = setTimeout(() => this.flush(), this.everySeconds * 1000)
      this.timer.unref()
    }
  }

  private flush(): void {
    if (this.count > 0) {
      const parts = [...this.by].map(([k, n]) => `${n.toLocaleString("en-US")} from ${k}`).join("; ")
      this.log(`refused ${this.count.toLocaleString("en-US")} connection${this.count === 1 ? "" : "s"} on the ${this.what} (${parts})`)
    }
    this.count = 0
    this.by.clear()
    this.timer = undefined
  }

  close(): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
  }
}

/**
 * Why a TLS handshake from a peer failed, in words (OpenSSL's codes).
 *
 * @since 0.1.0
 * @internal
 */
export const handshakeProblem = (e: Error & { code?: string }): string => {
  const m = `${e.code ?? ""} ${e.message}`
  if (/timed out|ETIMEDOUT|ERR_TLS_HANDSHAKE_TIMEOUT/i.test(m)) return `no handshake within ${HANDSHAKE_SECONDS} s`
  if (/ECONNRESET|socket hang up|EPIPE/.test(m)) return "closed before the handshake ended"
  if (/PSK|psk|no suitable signature|NO_SHARED_CIPHER|no shared cipher|decrypt|bad record mac|BAD_RECORD_MAC/i.test(m)) return "wrong or no cluster token"
  if (/wrong version number|WRONG_VERSION|http request|unknown protocol|UNSUPPORTED_PROTOCOL|packet length too long/i.test(m)) return "not TLS (plain TCP or garbage)"
  return `TLS handshake failed (${e.code ?? e.message.slice(0, 80)})`
}
