/**
 * Bytes a kernel read from files, reported to the engine: a reader kernel calls
 * `reportBytesRead(n)` after each read, and the executor running the task takes the
 * difference of `bytesRead()` before and after it as the task's `ioBytes` (the trace's
 * `io_bytes` arg). One counter per thread (module state; each worker thread has its
 * own copy of this module), so a task counts what its own thread read while it ran.
 *
 * Leaves out: bytes read by the operating system on the kernel's behalf (page cache,
 * read-ahead), reads by code that does not report them, and writes. On the in-process
 * executor a kernel that awaits while other code on the main thread reads a file gets
 * those bytes too (the counter is the thread's).
 *
 * No `node:` import: the DSL may load this module anywhere.
 *
 * @since 0.1.0
 */

let total = 0

/**
 * Adds `n` bytes read from a file by the task running on this thread. Ignores anything
 * but a finite, positive number.
 *
 * @since 0.1.0
 * @category formatting
 */
export const reportBytesRead = (n: number): void => {
  if (n > 0 && n !== Infinity) total += n
}

/**
 * Bytes reported on this thread so far (a running total; executors take differences).
 *
 * @since 0.1.0
 * @category getters
 */
export const bytesRead = (): number => total
