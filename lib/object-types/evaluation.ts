import { Piscina } from 'piscina'
import type { DocumentCheck, DocumentVerdict } from './document-check.js'

// The evaluation pool: worker threads for checks whose cost the caller chooses by the size of
// what it sends (the dry run's JSON body and attribute validation, up to MAX_BODY_BYTES). On the
// event loop such a check held every other tenant's requests for as long as it ran; in a thread
// it holds one thread, the heavy lane bounds how many a tenant has queued, and once loaded the
// threads run at a lower CPU priority than the event loop (document-check.ts `settle`), so on a
// busy machine the API's own thread and the database come first. docs/behaviour.md "Per-tenant
// fairness".

// Under tsx (tests, scripts) this module is the .ts source and so is its sibling.
const CHECK_FILE = new URL(`./document-check.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url).href

let pool: Piscina<DocumentCheck, DocumentVerdict> | null = null

/** The pool, made on first use with `threads` threads (EVALUATION_THREADS), which stay. */
function evaluationPool (threads: number): Piscina<DocumentCheck, DocumentVerdict> {
  pool ??= new Piscina({ filename: CHECK_FILE, minThreads: threads, maxThreads: threads })
  return pool
}

/**
 * Starts the pool and waits until its threads have loaded their code: an API process does it
 * before it listens, or its first dry run would wait for a thread to start (a second and more).
 */
export async function warmEvaluation (threads: number): Promise<void> {
  const p = evaluationPool(threads)
  await Promise.all(Array.from({ length: threads }, () => p.run(null as unknown as DocumentCheck, { name: 'warm' })))
}

/** Runs the dry run's document check (document-check.ts) in the pool. */
export function checkDocumentOffThread (threads: number, task: DocumentCheck): Promise<DocumentVerdict> {
  return evaluationPool(threads).run(task)
}

/** Ends the pool's threads (a stopping process). */
export async function closeEvaluation (): Promise<void> {
  const p = pool
  pool = null
  await p?.destroy()
}
