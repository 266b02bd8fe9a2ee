/**
 * `tessera export --format cpuprofile -o DIR`: the statistical profiler's samples as
 * `.cpuprofile` files (Chrome DevTools' Performance panel and speedscope open them), one
 * per worker thread (`worker-{host}-{i}.cpuprofile`, `driver.cpuprofile`) or one per
 * task function (`{function}.cpuprofile`, `idle`, `driver`). Times are epoch µs. Each
 * sample lasts its weight (the thread time it stands for, as `tessera analyze -a profile`
 * and SQL's `samples` count it); time no sample stands for is an `(unsampled)` sample
 * (`Profile.toCpuProfile`).
 *
 * Leaves out: the task attribution inside a per-worker file (a `.cpuprofile` has no
 * place for it; per-function files carry it by selection).
 *
 * @since 0.1.0
 */
import { makeDirectory } from "../../trace/Directory.ts"
import { writeOutputFile } from "../../trace/OutputFile.ts"
import { join } from "node:path"
import { cpuProfiles, cpuProfileSeconds, type DroppedBytes, loadProfilePromise, unsampledNode } from "../Profile.ts"

/**
 * The databases hold no samples (recorded without the statistical profiler).
 *
 * @since 0.1.0
 * @category errors
 */
export class NoSamples extends Error {
  readonly _tag = "NoSamples"
  readonly files: ReadonlyArray<string>
  constructor(files: ReadonlyArray<string>) {
    super(`no profile samples in ${files.join(", ")} (record with --profile and without --no-sample; the samples are in NAME-StatisticalProfiler-HOST.msgpack)`)
    this.files = files
  }
}

/**
 * The databases' profile samples could not be read: the bytes where they should be are
 * no whole record (a truncated or corrupt record at a file's end), and no sample was
 * read elsewhere (issue 32 item 12: this said "no profile samples").
 *
 * @since 0.1.0
 * @category errors
 */
export class UnreadableSamples extends Error {
  readonly _tag = "UnreadableSamples"
  readonly file: string
  readonly offset: number
  constructor(dropped: DroppedBytes) {
    super(`${dropped.file}: no readable profile samples: the ${dropped.bytes} byte(s) from byte offset ${dropped.offset} are not a whole record (a truncated or corrupt sample record), and no other record holds samples`)
    this.file = dropped.file
    this.offset = dropped.offset
  }
}

/**
 * A group name as a file name: characters other than letters, digits, `.`, `_`, `-`
 * become `_`.
 *
 * @since 0.1.0
 * @category encoding
 */
export const fileName = (group: string): string => `${group.replace(/[^A-Za-z0-9._-]/g, "_") || "_"}.cpuprofile`

/**
 * Writes one `.cpuprofile` per worker or function into `dir` (created); returns the
 * files written with their sample counts (the trace's samples, not the `(unsampled)` ones
 * between them) and the seconds those stand for, and (`dropped`) the bytes at a file's
 * end that were no whole record. Rejects with `NoSamples` when there are
 * none (`UnreadableSamples` when a file ends in bytes that are no whole record; a
 * `TraceFormatError` naming file and byte offset for a sample record that cannot be read
 * as written), and with `OutputIsInput` when a file to write is one of `files`. Each file is
 * whole or absent (`trace/OutputFile.ts`).
 *
 * @since 0.1.0
 * @category encoding
 */
export const writeCpuProfiles = async (
  files: ReadonlyArray<string>,
  dir: string,
  by: "worker" | "function"
): Promise<Array<{ readonly file: string; readonly samples: number; readonly seconds: number; readonly bytes: number }> & { readonly dropped: ReadonlyArray<DroppedBytes> }> => {
  const data = await loadProfilePromise(files)
  if (data.samples.time.length === 0) {
    const bad = data.dropped[0]
    throw bad !== undefined ? new UnreadableSamples(bad) : new NoSamples(files)
  }
  await makeDirectory(dir)
  const out: Array<{ file: string; samples: number; seconds: number; bytes: number }> = []
  const used = new Set<string>()
  for (const { name, profile } of cpuProfiles(data, by)) {
    let file = fileName(name)
    for (let k = 2; used.has(file); k++) file = fileName(`${name}-${k}`)
    used.add(file)
    const text = JSON.stringify(profile)
    // beside its name, renamed once whole; never one of the databases (a hard link to one)
    await writeOutputFile(join(dir, file), text, { inputs: files, flag: "--output" })
    const gaps = profile.nodes.find((n) => n.callFrame.functionName === unsampledNode && profile.nodes[0]!.children.includes(n.id))
    out.push({ file: join(dir, file), samples: profile.samples.length - (gaps?.hitCount ?? 0), seconds: cpuProfileSeconds(profile), bytes: Buffer.byteLength(text) })
  }
  // bytes at a file's end that were no whole record (the samples read are exported)
  return Object.assign(out, { dropped: data.dropped })
}
