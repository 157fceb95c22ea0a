import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { PgBoss } from 'pg-boss'
import { workInLoops, type Loops } from '../../worker/loops.js'
import { TEST_DATABASE_URL } from '../support/env.js'

// worker/loops.ts on a real pg-boss. pg-boss's own polling interval of every loop is set to 30 s
// here, so whatever finishes within a few seconds was fetched by the loops' own waking: a loop
// that got work fetching again at once, a loop starting work bringing in a resting one, and the
// idle process's half-second look. (pg-boss alone would wait 30 s after each of those fetches.)

const REST = 30

describe('worker fetch loops (workInLoops)', () => {
  let boss: PgBoss
  let n = 0
  const queue = () => `test.loops.${process.pid}.${++n}`
  const running: Loops[] = []

  before(async () => {
    boss = new PgBoss({ connectionString: TEST_DATABASE_URL, schema: 'pgboss_test_loops', supervise: false, schedule: false })
    boss.on('error', () => {})
    await boss.start()
  })

  after(async () => {
    for (const l of running) l.stop()
    await boss.stop({ graceful: false })
  })

  async function loops (name: string, options: { loops: number, batchSize: number, pollSeconds: number }, handler: (ids: string[]) => Promise<void>): Promise<Loops> {
    await boss.createQueue(name)
    const l = await workInLoops<{ i: number }>(boss, name, { ...options, restSeconds: REST }, batch => handler(batch.map(j => j.id)))
    running.push(l)
    return l
  }

  async function until (what: string, cond: () => boolean, seconds = 15): Promise<void> {
    for (let i = 0; i < seconds * 20 && !cond(); i++) await new Promise(r => setTimeout(r, 50))
    assert.ok(cond(), `${what} within ${seconds} s (pg-boss's own interval is ${REST} s)`)
  }

  it('a loop that got work fetches again at once, one job after another', async () => {
    const name = queue()
    const done: string[] = []
    // One loop, one job per fetch, and no timed look: only fetching again after each job drains 20.
    const l = await loops(name, { loops: 1, batchSize: 1, pollSeconds: 3600 }, async ids => { done.push(...ids) })
    await boss.insert(name, Array.from({ length: 20 }, (_, i) => ({ data: { i } })))
    l.wake()
    await until('20 jobs handled by one loop', () => done.length === 20)
    assert.equal(new Set(done).size, 20)
  })

  it('a loop that starts work brings in a resting one, until the backlog is shared', async () => {
    const name = queue()
    // Three jobs whose handlers finish only once all three run at the same time: one loop is
    // woken, and only the loops waking each other can put three in flight.
    let inFlight = 0
    let release: () => void = () => {}
    const all = new Promise<void>(r => { release = r })
    let most = 0
    const l = await loops(name, { loops: 3, batchSize: 1, pollSeconds: 3600 }, async () => {
      most = Math.max(most, ++inFlight)
      if (inFlight === 3) release()
      await Promise.race([all, new Promise(r => setTimeout(r, 20_000))])
      inFlight--
    })
    await boss.insert(name, [{ data: { i: 1 } }, { data: { i: 2 } }, { data: { i: 3 } }])
    l.wake()
    await until('three jobs in flight on three loops', () => most === 3)
  })

  it('an idle process still looks for work every pollSeconds', async () => {
    const name = queue()
    const done: string[] = []
    await loops(name, { loops: 2, batchSize: 4, pollSeconds: 0.5 }, async ids => { done.push(...ids) })
    // Both loops have made their first (empty) fetch and rest for 30 s.
    await new Promise(r => setTimeout(r, 1500))
    await boss.send(name, { i: 1 })
    await until('a job sent to resting loops handled', () => done.length === 1, 10)
  })

  it('stop ends the timed look (pg-boss stops the loops)', async () => {
    const name = queue()
    const done: string[] = []
    const l = await loops(name, { loops: 1, batchSize: 1, pollSeconds: 0.5 }, async ids => { done.push(...ids) })
    await new Promise(r => setTimeout(r, 1500))
    l.stop()
    await boss.send(name, { i: 1 })
    await new Promise(r => setTimeout(r, 3000))
    assert.equal(done.length, 0, 'no look after stop: the job waits for the 30 s backstop')
    l.wake()
    await until('the job handled once woken', () => done.length === 1)
  })
})
