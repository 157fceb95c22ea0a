// What the fault tests (test/faults) measure: how long one call took.

/** Runs `f` and says how long it took, in milliseconds. */
export async function timed<T> (f: () => Promise<T>): Promise<{ res: T, ms: number }> {
  const t0 = performance.now()
  const res = await f()
  return { res, ms: performance.now() - t0 }
}
