/**
 * The figure of a MemorySampler (profiler/MemorySampler.ts): its labelled series as step
 * lines over time, written as `{base}.svg` and `{base}.png`. In the report layer, with
 * every other figure; it takes anything with the sampler's `toTable`, so it does not
 * import the profiler.
 *
 * @since 0.1.0
 */
import type { Table } from "apache-arrow"
import { writeFigure } from "./Figure.ts"

/**
 * What {@link plot} reads: a MemorySampler, or anything with its long table.
 *
 * @since 0.1.0
 * @category models
 */
export interface Sampled {
  /** Long table (label, time, bytes); aligned: time = seconds since each series' first sample. */
  readonly toTable: (options?: { readonly align?: boolean }) => Table
}

/**
 * Write `{base}.svg` and `{base}.png` comparing the sampler's series; returns the paths.
 *
 * @since 0.1.0
 * @category formatting
 */
export const plot = (
  sampler: Sampled,
  base: string,
  options?: { readonly align?: boolean; readonly title?: string }
): Promise<ReadonlyArray<string>> => {
  const align = options?.align ?? true
  const t = sampler.toTable({ align })
  const label = t.getChild("label")!
  const time = t.getChild("time")!
  const bytes = t.getChild("bytes")!
  let max = 0
  for (let i = 0; i < t.numRows; i++) max = Math.max(max, bytes.get(i) as number)
  const units = ["B", "KiB", "MiB", "GiB"]
  let u = 0
  while (u < units.length - 1 && max >= 1024 ** (u + 1)) u++
  const values = Array.from({ length: t.numRows }, (_, i) => ({
    label: label.get(i) as string,
    time: time.get(i) as number,
    value: (bytes.get(i) as number) / 1024 ** u
  }))
  return writeFigure(
    {
      $schema: "https://vega.github.io/schema/vega-lite/v6.json",
      title: options?.title ?? "Memory over time",
      width: 560,
      height: 260,
      background: "white",
      data: { values },
      mark: { type: "line", interpolate: "step-after" },
      encoding: {
        x: { field: "time", type: "quantitative", title: align ? "seconds since start of each run" : "time (epoch s)", scale: { zero: false } },
        y: { field: "value", type: "quantitative", title: `memory (${units[u]})` },
        color: { field: "label", type: "nominal", title: "run" }
      }
    },
    base
  )
}
