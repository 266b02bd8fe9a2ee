/**
 * Diagnosis in plain words: what is wrong with a run, the evidence, the fix and what the
 * fix would save. Reads a loaded trace through the built-in analyses (the critical path
 * split into tasks / driver / scheduling latency, the stage columns, per-task CPU, I/O
 * and memory, transfers, clock offsets and, when the databases hold them, the stack
 * samples' GC frames; `diagnosis/Facts.ts`), runs the rules of `diagnosis/Rules.ts`
 * (a fixed vocabulary of rule ids) and orders their findings by the saving a what-if on
 * the recorded critical path estimates (`diagnosis/WhatIf.ts`). `tessera diagnose` is
 * this plus argument parsing; the HTML report shows the same findings first.
 *
 * `memory-pressure` reads the hosts' memory from the resource samples (Tessera's
 * ResourceMonitor adds the host's total and available memory to DASF's args; DASF's traces
 * have neither, and get no such finding); GPU rules fire only on traces of GPU workers.
 * Leaves out: a worker near its V8 heap limit (the trace does not record the limit).
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type { TraceFormatError } from "../trace/TraceFormat.ts"
import { type DiagnosisTables, factsOf, type GcSeconds } from "./diagnosis/Facts.ts"
import { hostMemoryOfTable, readHostMemory } from "./diagnosis/HostMemory.ts"
import { defaultThresholds, type Finding, format, ruleIds, runRules, type Severity, type Thresholds } from "./diagnosis/Rules.ts"
import { loadPromise, type TraceTables } from "./Load.ts"
import { loadProfilePromise, type ProfileData } from "./Profile.ts"
import { runsOf } from "./Runs.ts"
import { SampleEventNames } from "../trace/SampleEvents.ts"

export { defaultThresholds, ruleIds } from "./diagnosis/Rules.ts"
export type { Evidence, Finding, RuleId, Severity, Thresholds } from "./diagnosis/Rules.ts"
export type { DiagnosisTables } from "./diagnosis/Facts.ts"
export type { HostMemory } from "./diagnosis/HostMemory.ts"

/**
 * A diagnosis: the findings, by estimated saving (largest first); the run's wall time
 * and start (epoch seconds; evidence times are from it); the critical path's split;
 * `clean`: no finding of high severity.
 *
 * @since 0.1.0
 * @category models
 */
export interface Diagnosis {
  readonly findings: ReadonlyArray<Finding>
  readonly clean: boolean
  readonly wall: number
  readonly runStart: number
  readonly tasks: number
  readonly workers: number
  readonly criticalPath: { readonly length: number; readonly tasks: number; readonly driver: number; readonly latency: number }
  /** whether stack samples were read (gc-pressure needs them) */
  readonly sampled: boolean
  readonly thresholds: Thresholds
}

/**
 * Options: thresholds to change (the rest keep their defaults), and the stack samples
 * (gc-pressure reads their GC frames).
 *
 * @since 0.1.0
 * @category models
 */
export interface DiagnoseOptions {
  readonly thresholds?: ThresholdSettings
  readonly profile?: ProfileData
  /**
   * worker threads the run had, where the trace cannot say: a pool started before the
   * profiler (one executor kept for several pipelines) leaves no start-ups in it
   */
  readonly workers?: number
}

/**
 * A threshold that is not one: an unknown name, or a value that is not a finite
 * number of at least 0. Names the threshold and the value.
 *
 * @since 0.1.0
 * @category errors
 */
export class DiagnoseError extends Data.TaggedError("DiagnoseError")<{ readonly what: string; readonly message: string }> {
  /** a bad threshold is a usage error (`tessera diagnose` exits 2); databases without a task or of several runs, a failure */
  get usage(): boolean {
    return this.what !== "databases"
  }
}

/**
 * Parse `NAME=VALUE` threshold settings (`--threshold stragglerFactor=4`,
 * `--threshold severity.high=0.3`). Throws `DiagnoseError` naming a bad one.
 *
 * @since 0.1.0
 * @category encoding
 */
export const parseThresholds = (settings: ReadonlyArray<string>): ThresholdSettings => {
  const out: Record<string, unknown> = {}
  for (const s of settings) {
    const m = /^([A-Za-z.]+)=(.*)$/.exec(s)
    const value = m === null ? NaN : Number(m[2])
    if (m === null || m[2]!.trim() === "" || !Number.isFinite(value)) {
      throw new DiagnoseError({ what: s, message: `--threshold ${s}: expected NAME=NUMBER (names: ${Object.keys(defaultThresholds).join(", ")}, severity.high, severity.medium)` })
    }
    const name = m[1]!
    if (name.startsWith("severity.")) out.severity = { ...(out.severity as object ?? {}), [name.slice(9)]: value }
    else out[name] = value
  }
  thresholdsOf(out as ThresholdSettings)
  return out as ThresholdSettings
}

/**
 * Thresholds to change: any of them (the rest keep their defaults), `severity`'s two
 * each on its own.
 *
 * @since 0.1.0
 * @category models
 */
export type ThresholdSettings = Partial<Omit<Thresholds, "severity">> & { readonly severity?: Partial<Thresholds["severity"]> }

const gcFrame = "(garbage collector)"

/**
 * Seconds of samples per task function, and of those in V8's GC frame; the worker
 * threads sampled.
 *
 * @since 0.1.0
 * @category analysis
 */
export const gcSeconds = (d: ProfileData): GcSeconds => {
  const isGc = new Uint8Array(d.frames.length)
  d.frames.forEach((f, i) => (isGc[i] = f.functionName === gcFrame ? 1 : 0))
  const byFunction = new Map<string, { sampled: number; gc: number }>()
  const perTask = new Int32Array(d.samples.tasks.length)
  let sampled = 0
  let gc = 0
  const s = d.samples
  for (let q = 0; q < s.time.length; q++) {
    const w = s.weight[q]!
    const t = s.taskIndex[q]!
    if (t >= 0) perTask[t]!++
    const fn = t >= 0 ? s.tasks[t]!.name : "idle"
    let e = byFunction.get(fn)
    if (e === undefined) byFunction.set(fn, e = { sampled: 0, gc: 0 })
    e.sampled += w
    sampled += w
    const node = s.stack[q]!
    if (node >= 0 && isGc[d.frame[node]!] === 1) (e.gc += w, gc += w)
  }
  const workers = new Set(s.threads.filter((t) => t.thread.startsWith("worker-")).map((t) => `${t.host}\t${t.thread}`)).size
  const samplesByKey = new Map<string, number>()
  s.tasks.forEach((t, i) => t.key !== "" && samplesByKey.set(t.key, (samplesByKey.get(t.key) ?? 0) + perTask[i]!))
  let interval = 0
  for (let q = 0; q < s.interval.length && interval === 0; q++) interval = s.interval[q]!
  return { workers, sampled, gc, byFunction, samplesByKey, interval }
}

/**
 * Check and merge thresholds over the defaults.
 *
 * @since 0.1.0
 * @category constructors
 */
export const thresholdsOf = (given: ThresholdSettings | undefined): Thresholds => {
  if (given === undefined) return defaultThresholds
  const out: Record<string, unknown> = { ...defaultThresholds }
  for (const [k, v] of Object.entries(given)) {
    if (!(k in defaultThresholds)) throw new DiagnoseError({ what: k, message: `unknown threshold ${k}; known: ${Object.keys(defaultThresholds).join(", ")}` })
    if (k === "severity") {
      const s = v as { high?: unknown; medium?: unknown }
      for (const [n, x] of Object.entries(s ?? {})) {
        if (n !== "high" && n !== "medium") throw new DiagnoseError({ what: `severity.${n}`, message: `unknown threshold severity.${n}; known: severity.high, severity.medium` })
        if (typeof x !== "number" || !Number.isFinite(x) || x < 0) throw new DiagnoseError({ what: `severity.${n}`, message: `threshold severity.${n} must be a finite number of at least 0, got ${String(x)}` })
      }
      out.severity = { ...defaultThresholds.severity, ...(s as object) }
      continue
    }
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) throw new DiagnoseError({ what: k, message: `threshold ${k} must be a finite number of at least 0, got ${String(v)}` })
    out[k] = v
  }
  return out as unknown as Thresholds
}

/**
 * Diagnose a loaded trace. Throws `DiagnoseError` for a bad threshold.
 *
 * @since 0.1.0
 * @category analysis
 */
export const diagnoseTables = (tables: DiagnosisTables, options: DiagnoseOptions = {}): Diagnosis => {
  const thresholds = thresholdsOf(options.thresholds)
  if (options.workers !== undefined && !(Number.isInteger(options.workers) && options.workers >= 1)) {
    throw new DiagnoseError({ what: "workers", message: `workers must be an integer of at least 1, got ${options.workers}` })
  }
  const facts = factsOf(tables, options.profile !== undefined ? gcSeconds(options.profile) : undefined, options.workers)
  const findings = facts.v.n === 0 ? [] : runRules(facts, thresholds)
  const p = facts.path
  return {
    findings,
    clean: !findings.some((f) => f.severity === "high"),
    wall: facts.wall,
    runStart: facts.runStart,
    tasks: facts.v.n,
    workers: Math.max(options.workers ?? 0, new Set(facts.workers.map((w) => `${w.host}\t${w.worker}`)).size),
    criticalPath: { length: p.length, tasks: p.tasks, driver: p.driver, latency: p.latency },
    sampled: options.profile !== undefined,
    thresholds
  }
}

/**
 * Load databases and diagnose them: the stack samples are read too when a database
 * holds some. Rejects with the trace layer's `TraceFormatError` for a file that cannot
 * be read, `DiagnoseError` for a bad threshold, databases without a task, or databases
 * of several runs.
 *
 * @since 0.1.0
 * @category analysis
 */
export const diagnoseFilesPromise = async (
  files: ReadonlyArray<string>,
  options: { readonly thresholds?: ThresholdSettings; readonly workers?: number; readonly tables?: TraceTables } = {}
): Promise<Diagnosis & { readonly warnings: ReadonlyArray<string> }> => {
  const thresholds = thresholdsOf(options.thresholds) // a bad threshold fails before any load
  const tables = options.tables ?? await loadPromise(files)
  if (tables.tasks.numRows === 0) {
    throw new DiagnoseError({ what: "databases", message: `the databases hold no task (${files.join(", ")}): nothing to diagnose` })
  }
  const runs = runsOf(tables)
  if (runs.length > 1) {
    throw new DiagnoseError({ what: "databases", message: `the databases hold ${runs.length} runs; diagnose one at a time (tessera analyze names them)` })
  }
  const hasSamples = (tables.eventCounts[SampleEventNames.samples] ?? 0) > 0
  const profile = hasSamples ? await loadProfilePromise(files) : undefined
  // the hosts' memory: from the resource table where the loader keeps its columns, else
  // read again from the resource monitor's files (HostMemory.ts)
  const hostMemory = hostMemoryOfTable(tables.resources) ??
    ((tables.eventCounts["Resource Usage"] ?? 0) > 0 ? await readHostMemory(files, new Map(tables.clocks.map((c) => [c.file, c.shift]))) : [])
  const d = diagnoseTables({ ...tables, hostMemory }, { thresholds, ...(profile !== undefined ? { profile } : {}), ...(options.workers !== undefined ? { workers: options.workers } : {}) })
  return { ...d, warnings: tables.warnings }
}

/**
 * As {@link diagnoseFilesPromise}, as an Effect.
 *
 * @since 0.1.0
 * @category analysis
 */
export const diagnoseFiles = (
  files: ReadonlyArray<string>,
  options: { readonly thresholds?: ThresholdSettings; readonly workers?: number } = {}
): Effect.Effect<Diagnosis & { readonly warnings: ReadonlyArray<string> }, TraceFormatError | DiagnoseError> =>
  Effect.tryPromise({
    try: () => diagnoseFilesPromise(files, options),
    catch: (e) => e as TraceFormatError | DiagnoseError
  })

/**
 * The diagnosis as JSON (docs/diagnosis.md, "JSON"): `{ version: 1, clean, wall,
 * runStart, tasks, workers, criticalPath, sampled, findings: [...] }`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const toJson = (d: Diagnosis): object => ({
  version: 1,
  clean: d.clean,
  wall: d.wall,
  runStart: d.runStart,
  tasks: d.tasks,
  workers: d.workers,
  criticalPath: d.criticalPath,
  sampled: d.sampled,
  findings: d.findings
})

const mark: Record<Severity, string> = { high: "HIGH  ", medium: "MEDIUM", low: "LOW   " }

/**
 * The diagnosis as text: a headline, then per finding its severity, rule, sentence,
 * evidence, fix, saving and assumptions.
 *
 * @since 0.1.0
 * @category formatting
 */
export const toText = (d: Diagnosis): string => {
  const lines: Array<string> = []
  const p = d.criticalPath
  const share = (x: number) => (p.length > 0 ? format.pct(x / p.length) : "0%")
  lines.push(
    `${format.n(d.tasks)} tasks on ${d.workers} worker${d.workers === 1 ? "" : "s"} in ${format.seconds(d.wall)}; critical path ${format.seconds(p.length)}: tasks ${share(p.tasks)}, driver ${share(p.driver)}, scheduling latency ${share(p.latency)}`
  )
  if (d.findings.length === 0) lines.push("No findings: nothing in this run stands out.")
  else if (d.clean) lines.push(`A clean run: no finding of high severity (${d.findings.length} of lower severity below).`)
  d.findings.forEach((f, i) => {
    const e = f.evidence
    const where = [
      e.stage !== undefined ? `stage ${e.stage}` : "",
      e.function !== undefined && e.function !== e.stage ? `function ${e.function}` : "",
      e.worker !== undefined ? `worker ${e.worker}` : "",
      `${e.start.toFixed(3)}–${e.end.toFixed(3)} s`,
      e.keys.length > 0 ? `keys ${e.keys.slice(0, 3).join(", ")}${e.keys.length > 3 ? `, … (${e.keys.length}${e.keys.length === 20 ? "+" : ""})` : ""}` : ""
    ].filter((x) => x !== "").join("; ")
    lines.push(
      "",
      `${i + 1}. ${mark[f.severity]} ${f.rule}: ${f.message}`,
      `   evidence: ${where}`,
      `   fix: ${f.fix}`,
      `   saving: ~${format.seconds(f.saving.seconds)} (${format.pct(f.saving.share)} of the wall time)`,
      `   assumes: ${f.assumptions}`
    )
  })
  return lines.join("\n")
}

/** every id, for a check that the vocabulary stays whole @internal */
export const allRuleIds: ReadonlyArray<string> = ruleIds
