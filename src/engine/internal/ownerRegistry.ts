/**
 * Things registered per owner object until they detach: what `Sampling` (sample sources)
 * and `WorkerPlugin` (plugin hosts) keep for the hook that asked for them, so the layer
 * closing can reach every executor acting for it.
 *
 * @since 0.1.0
 * @internal
 */
export interface OwnerRegistry<A> {
  /** registers `a` for `owner` until the returned function is called */
  readonly attach: (owner: object, a: A) => () => void
  /** what is registered for `owner` now */
  readonly of: (owner: object) => ReadonlyArray<A>
}

/**
 * A new, empty registry.
 *
 * @since 0.1.0
 * @internal
 */
export const make = <A>(): OwnerRegistry<A> => {
  const byOwner = new Map<object, Set<A>>()
  return {
    attach: (owner, a) => {
      let set = byOwner.get(owner)
      if (set === undefined) byOwner.set(owner, set = new Set())
      set.add(a)
      return () => {
        set.delete(a)
        if (set.size === 0 && byOwner.get(owner) === set) byOwner.delete(owner)
      }
    },
    of: (owner) => [...(byOwner.get(owner) ?? [])]
  }
}
