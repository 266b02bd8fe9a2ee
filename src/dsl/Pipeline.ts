/**
 * Pipeline: DASF's `Pipeline(name).add(stage, X=source).run()` as a typed DAG of stages.
 * A stage is any named function from its inputs to an Effect; `add` returns a handle
 * whose type is the stage's output, so feeding a stage an input of the wrong type is a
 * compile-time error. Stages can only name stages added before them, so a pipeline is
 * acyclic by construction; inputs from another pipeline and duplicate names are
 * rejected when added.
 *
 * `run` executes stages in the order they were added (a topological order), logging as
 * DASF does, and returns every stage's output. While a stage runs, its name is the
 * engine's `TaskGraph.CurrentStage`: the tasks it computes that name no stage of their
 * own (`mapBlocks` without `stage:`, ...) get its name in their records and trace events. Pure: the executor is whatever Executor
 * layer the caller provides.
 *
 * @since 0.1.0
 */
import { Clock, Effect, LogLevel } from "effect"
import type { Executor } from "../engine/Executor.ts"
import { CurrentStage } from "../engine/TaskGraph.ts"
import { DslError, StageFailed } from "./DslError.ts"

/**
 * A stage: a name and a function from named inputs to an Effect.
 *
 * @since 0.1.0
 * @category models
 */
export interface Stage<I extends Record<string, unknown>, O, E = unknown> {
  readonly name: string
  readonly run: (inputs: I) => Effect.Effect<O, E, Executor>
}

/**
 * Makes a stage from a name and a function.
 *
 * @since 0.1.0
 * @category constructors
 */
export const stage = <I extends Record<string, unknown>, O, E = never>(
  name: string,
  run: (inputs: I) => Effect.Effect<O, E, Executor>
): Stage<I, O, E> => ({ name, run })

/**
 * A handle on a stage's output inside one pipeline.
 *
 * @since 0.1.0
 * @category models
 */
export interface Node<O> {
  readonly _tag: "Node"
  readonly pipeline: string
  readonly stage: string
  readonly index: number
  readonly _O?: (_: never) => O
}

/** Each input: a node of this pipeline whose output type fits, or a plain value. */
export type Inputs<I> = { readonly [K in keyof I]: Node<I[K]> | I[K] }

interface Entry {
  readonly stage: Stage<any, unknown, unknown>
  readonly inputs: Record<string, unknown>
}

/**
 * A stage that failed (DslError.ts), re-exported where `run` is.
 *
 * @since 0.1.0
 * @category errors
 */
export { StageFailed } from "./DslError.ts"

const isNode = (u: unknown): u is Node<unknown> => typeof u === "object" && u !== null && (u as Node<unknown>)._tag === "Node"

/**
 * A pipeline under construction.
 *
 * @since 0.1.0
 * @category models
 */
export class Pipeline {
  readonly name: string
  readonly entries: Array<Entry> = []
  readonly log: (line: string) => void
  constructor(name: string, options: { readonly log?: (line: string) => void } = {}) {
    this.name = name
    this.log = options.log ?? ((line) => console.log(line))
  }

  /** Adds a stage fed by earlier stages' outputs (or plain values); returns its output handle. */
  add<I extends Record<string, unknown>, O, E>(s: Stage<I, O, E>, inputs: Inputs<I>): Node<O> {
    if (this.entries.some((e) => e.stage.name === s.name)) throw DslError.duplicateStage(s.name)
    for (const [k, v] of Object.entries(inputs as Record<string, unknown>)) {
      if (isNode(v) && (v.pipeline !== this.name || this.entries[v.index]?.stage.name !== v.stage)) {
        throw DslError.unknownInput(s.name, `${k} = ${v.pipeline}/${v.stage}`)
      }
    }
    this.entries.push({ stage: s, inputs: inputs as Record<string, unknown> })
    return { _tag: "Node", pipeline: this.name, stage: s.name, index: this.entries.length - 1 }
  }

  /** Stage DAG: nodes and (from, to, input) edges. */
  graph(): { readonly nodes: ReadonlyArray<string>; readonly edges: ReadonlyArray<readonly [string, string, string]> } {
    const edges: Array<readonly [string, string, string]> = []
    for (const e of this.entries) {
      for (const [k, v] of Object.entries(e.inputs)) if (isNode(v)) edges.push([v.stage, e.stage.name, k])
    }
    return { nodes: this.entries.map((e) => e.stage.name), edges }
  }

  /**
   * The stage DAG as Graphviz DOT. To draw it as SVG: `Report.renderDot(p.visualize())`
   * (report/Graphviz.ts; the DSL does not import the report layer).
   */
  visualize(): string {
    const q = (s: string) => JSON.stringify(s)
    const g = this.graph()
    return [
      `digraph ${q(this.name)} {`,
      "  rankdir=LR; node [shape=box, style=rounded];",
      ...g.nodes.map((n) => `  ${q(n)};`),
      ...g.edges.map(([a, b, k]) => `  ${q(a)} -> ${q(b)} [label=${q(k)}];`),
      "}"
    ].join("\n")
  }

  /** Runs every stage in order; returns each stage's output by stage name. */
  run(): Effect.Effect<ReadonlyMap<string, unknown>, StageFailed, Executor> {
    const self = this
    return Effect.gen(function*() {
      const outputs: Array<unknown> = []
      for (const e of self.entries) {
        const args: Record<string, unknown> = {}
        for (const [k, v] of Object.entries(e.inputs)) args[k] = isNode(v) ? outputs[v.index] : v
        if (yield* info) self.log(`${yield* stamp} INFO - Task '${e.stage.name}': Starting task run...`)
        // the stage's typed failure kept as a value; a defect (a bug) stays a defect
        const out = yield* Effect.mapError(
          Effect.provideService(e.stage.run(args), CurrentStage, e.stage.name),
          (error) => StageFailed.make(e.stage.name, error)
        )
        if (yield* info) self.log(`${yield* stamp} INFO - Task '${e.stage.name}': Finished task run`)
        outputs.push(out)
      }
      if (yield* info) self.log(`${yield* stamp} INFO - Pipeline run successfully`)
      return new Map(self.entries.map((e, i) => [e.stage.name, outputs[i]]))
    })
  }
}

/** The INFO lines are written when Effect's minimum log level lets Info through (`--log-level`). */
const info = LogLevel.isEnabled("Info")

/** `[YYYY-MM-DD HH:MM:SS,mmm]` as DASF's logger prints it (UTC). */
const stamp = Effect.map(Clock.currentTimeMillis, (ms) => {
  const iso = new Date(ms).toISOString()
  return `[${iso.slice(0, 10)} ${iso.slice(11, 19)},${iso.slice(20, 23)}]`
})

/**
 * Starts a pipeline.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (name: string, options: { readonly log?: (line: string) => void } = {}): Pipeline => new Pipeline(name, options)
