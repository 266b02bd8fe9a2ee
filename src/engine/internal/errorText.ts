/**
 * How the engine's error messages name where a failure happened: the kernel's frame in a
 * worker-side stack, the task (and its stage) a message starts with, byte counts and
 * module URLs as a message shows them. EngineError.ts's constructors write every message
 * with these, so messages of one kind have one shape.
 *
 * @since 0.1.0
 * @internal
 */

/**
 * `file:line:column` of the kernel's frame in a worker-side stack: the first frame in the
 * kernel's module (`module`, a URL), else the first frame with a file location outside
 * Tessera's engine (a helper the kernel called); undefined when the stack names none.
 * File URLs are written as paths.
 *
 * @since 0.1.0
 * @internal
 */
export const kernelFrame = (stack: string, module?: string): string | undefined => {
  const frames: Array<string> = []
  for (const line of stack.split("\n")) {
    const m = /^\s+at (?:.*? \()?((?:file|https?|data|node):[^\s)]*?|\/[^\s)]*?):(\d+):(\d+)\)?\s*$/.exec(line)
    if (m !== null) frames.push(`${m[1]}:${m[2]}:${m[3]}`)
  }
  const bare = module?.replace(/[?#].*$/, "")
  const path = bare?.startsWith("file://") ? decodeURIComponent(new URL(bare).pathname) : bare
  const inModule = frames.find((f) => bare !== undefined && (f.startsWith(bare + ":") || (path !== undefined && f.startsWith(path + ":"))))
  const found = inModule ?? frames.find((f) => !f.startsWith("node:") && !/\/engine\/(internal\/)?[A-Za-z]+\.(ts|js):/.test(f))
  if (found === undefined) return undefined
  return found.startsWith("file://") ? decodeURIComponent(found.slice("file://".length)) : found
}

/**
 * The fields naming a task (and its stage, when it has one), and the message's start
 * that names them: `stage "s": task "k"`.
 *
 * @since 0.1.0
 * @internal
 */
export const taskPlace = (key: string, kernel: string, stage: string | undefined) => ({
  fields: stage !== undefined ? { key, kernel, stage } : { key, kernel },
  where: `${stage !== undefined ? `stage "${stage}": ` : ""}task "${key}"`
})

/**
 * Bytes in MiB, for messages.
 *
 * @since 0.1.0
 * @internal
 */
export const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(0)} MiB`

/**
 * A module URL as a message and an error's field show it: its first 200 characters (a
 * `data:` URL can hold a whole module), `…` when cut.
 *
 * @since 0.1.0
 * @internal
 */
export const shownModule = (module: string): string => (module.length > 200 ? `${module.slice(0, 200)}…` : module)
