/**
 * CPU time of this process's threads by name, from Linux's /proc/self/task (user +
 * system, in clock ticks of 10 ms): where a profiled run's added CPU goes. Node names its
 * threads: `MainThread`, `WorkerThread` (the pool's workers), `V8Worker` (V8's platform
 * threads: parallel and concurrent GC, background compilation), `v8:ProfEvntProc` (one
 * per thread that V8's CPU profiler samples: it wakes every sampling interval, signals the
 * thread and symbolises the sample), `libuv-worker`, `SignalInspector`.
 *
 * Leaves out: other systems (no /proc: `threadTimes` is empty, and the bench says so);
 * finer resolution than a tick (sum over many runs, or compare means).
 *
 * @since 0.1.0
 */
import { readdirSync, readFileSync } from "node:fs"

const names = new Map<string, string>()
const tickMs = 10

/**
 * CPU ms so far of every live thread, by thread id (with its name); empty without /proc.
 * With `children`, the threads of this process's child processes too (cluster worker
 * processes), named `child ` + their name.
 *
 * @since 0.1.0
 * @category getters
 */
export const threadTimes = (children = false): Map<string, { readonly name: string; readonly ms: number }> => {
  const out = new Map<string, { readonly name: string; readonly ms: number }>()
  readTasks("self", "", out)
  if (children) for (const pid of childPids()) readTasks(pid, "child ", out)
  return out
}

/** Pids of this process's children (every thread's `children` list). */
const childPids = (): Array<string> => {
  const out: Array<string> = []
  try {
    for (const tid of readdirSync("/proc/self/task")) {
      try {
        out.push(...readFileSync(`/proc/self/task/${tid}/children`, "latin1").split(" ").filter((x) => x !== ""))
      } catch {
        // the thread ended, or no `children` file (CONFIG_PROC_CHILDREN)
      }
    }
  } catch {
    // no /proc
  }
  return out
}

const readTasks = (pid: string, prefix: string, out: Map<string, { readonly name: string; readonly ms: number }>): void => {
  let tids: Array<string>
  try {
    tids = readdirSync(`/proc/${pid}/task`)
  } catch {
    return
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "latin1")
      // fields after "(comm)": state is field 3; utime and stime are fields 14 and 15
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      let name = names.get(tid)
      if (name === undefined) names.set(tid, name = prefix + readFileSync(`/proc/${pid}/task/${tid}/comm`, "latin1").trim())
      out.set(tid, { name, ms: (Number(f[11]) + Number(f[12])) * tickMs })
    } catch {
      // the thread ended between the listing and the read
    }
  }
}

/**
 * CPU ms each thread name used between two `threadTimes` readings (threads started in
 * between count from 0; threads that ended in between are not seen).
 *
 * @since 0.1.0
 * @category getters
 */
export const usedByName = (
  before: ReadonlyMap<string, { readonly name: string; readonly ms: number }>,
  after: ReadonlyMap<string, { readonly name: string; readonly ms: number }>
): Map<string, number> => {
  const out = new Map<string, number>()
  for (const [tid, t] of after) out.set(t.name, (out.get(t.name) ?? 0) + t.ms - (before.get(tid)?.ms ?? 0))
  return out
}
