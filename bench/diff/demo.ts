/**
 * The demo's pipeline (DASF tutorial 5: blobs -> Normalize -> KMeans + SOM -> Persist) as
 * a `tessera run` / `tessera bench` file (issue 36: warm against fresh-process rounds on
 * the demo, BENCHMARKS.md). `DEMO_SAMPLES` sets the samples (default 100,000, as
 * `tessera demo`).
 */
import * as Tutorial5 from "../../examples/tutorial5/Tutorial5.ts"

export default () => Tutorial5.make({ samples: Number(process.env.DEMO_SAMPLES ?? 100_000) }).pipeline
