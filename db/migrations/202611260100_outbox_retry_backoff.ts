import type { Knex } from 'knex'

// An outbox event whose delivery failed was offered again on every dispatch (each second), forever,
// in silence. It now waits until `next_attempt_at` (1 s after the first failure, doubling, at most
// 5 minutes: lib/outbox) and is skipped by claims and by the pending poll meanwhile. NULL: due now
// (every event that never failed), so writes set nothing and the column costs them nothing.
export async function up (knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE outbox_events ADD COLUMN next_attempt_at timestamptz')
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE outbox_events DROP COLUMN next_attempt_at')
}
