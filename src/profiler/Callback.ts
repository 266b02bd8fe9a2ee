/**
 * Callback: user hooks (any subset of dask's five: start, startState, pretask, posttask,
 * finish) and the three ways every diagnostic (ProgressBar, Profiler, ResourceProfiler,
 * CacheProfiler) is used, as in dask:
 *
 * - around one compute: `Engine.compute(graph, { callbacks: [d.callbacks] })`;
 * - for the effects a layer is provided to: `layer(d)` (`Hooks.layer`, the Effect context);
 * - globally (dask's escape hatch, every compute sees them): `register(d)` returns the
 *   unregister function, `scoped(d)` unregisters when the current scope closes.
 *
 * `layer` and `scoped` also run the diagnostic's `open` (when it has one) for their scope,
 * so a diagnostic can span the computes of a run (ProgressBar draws one bar per run).
 *
 * @since 0.1.0
 */
import { Data, Effect, type Layer, type Scope } from "effect"
import * as Hooks from "../engine/Hooks.ts"

/**
 * Anything that carries engine callbacks.
 *
 * @since 0.1.0
 * @category models
 */
export interface HasCallbacks {
  readonly callbacks: Hooks.Callbacks
  /**
   * Run when a layer or scope that holds the diagnostic opens (`layer`, `scoped`), its
   * finalizers when that closes: a diagnostic that spans several computes (ProgressBar's
   * one bar per run) learns where the run ends.
   */
  readonly open?: Effect.Effect<void, never, Scope.Scope>
}

/**
 * The hook names a user callback may define.
 *
 * @since 0.1.0
 * @category models
 */
export const hookNames = ["start", "startState", "pretask", "posttask", "finish", "task", "memory"] as const

/**
 * A user callback object is not a set of hooks (unknown name, or not a function).
 *
 * @since 0.1.0
 * @category errors
 */
export class CallbackError extends Data.TaggedError("CallbackError")<{
  readonly hook: string
  readonly detail: string
}> {
  override get message(): string {
    return `callback hook "${this.hook}": ${this.detail} (hooks: ${hookNames.join(", ")})`
  }
}

/**
 * Validates user hooks (any subset) into a diagnostic. Throws `CallbackError` for an
 * unknown hook name or a hook that is not a function.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe = (hooks: Hooks.Callbacks): HasCallbacks => {
  for (const [name, fn] of Object.entries(hooks)) {
    if (!(hookNames as ReadonlyArray<string>).includes(name)) {
      throw new CallbackError({ hook: name, detail: "is not a hook name" })
    }
    if (fn !== undefined && typeof fn !== "function") {
      throw new CallbackError({ hook: name, detail: `must be a function, got ${typeof fn}` })
    }
  }
  return { callbacks: { ...hooks } }
}

/**
 * Validates user hooks into a diagnostic (Effect form).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (hooks: Hooks.Callbacks): Effect.Effect<HasCallbacks, CallbackError> =>
  Effect.try({ try: () => makeUnsafe(hooks), catch: (e) => e as CallbackError })

/**
 * Registers `d` for every compute; returns the unregister function.
 *
 * @since 0.1.0
 * @category layers
 */
export const register = (d: HasCallbacks): () => void => Hooks.register(d.callbacks)

/**
 * Registers `d` globally for the current scope; returns `d`.
 *
 * @since 0.1.0
 * @category layers
 */
export const scoped = <D extends HasCallbacks>(d: D): Effect.Effect<D, never, Scope.Scope> =>
  Effect.as(d.open === undefined ? Hooks.registerScoped(d.callbacks) : Effect.andThen(d.open, Hooks.registerScoped(d.callbacks)), d)

/**
 * Adds `d`'s callbacks to the context of the effects the layer is provided to.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (d: HasCallbacks): Layer.Layer<never> =>
  d.open === undefined ? Hooks.layer(d.callbacks) : Hooks.layerEffect(Effect.as(d.open, d.callbacks))
