import type { Knex } from 'knex'

// automation_rule_stats was one row per rule that every finishing run of the rule updated: runs
// of one rule on several workers queued on that row's lock until each other's COMMIT. Each run now
// adds to one of 16 slot rows (chosen at random), and readers sum the slots.
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE automation_rule_stats ADD COLUMN slot smallint NOT NULL DEFAULT 0;
    ALTER TABLE automation_rule_stats DROP CONSTRAINT automation_rule_stats_pkey;
    ALTER TABLE automation_rule_stats ADD PRIMARY KEY (tenant_id, rule_id, slot);
  `)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TEMP TABLE rule_stats_sum AS SELECT tenant_id, rule_id, sum(executed)::bigint AS executed FROM automation_rule_stats GROUP BY 1, 2;
    DELETE FROM automation_rule_stats;
    ALTER TABLE automation_rule_stats DROP CONSTRAINT automation_rule_stats_pkey;
    ALTER TABLE automation_rule_stats DROP COLUMN slot;
    INSERT INTO automation_rule_stats SELECT tenant_id, rule_id, executed FROM rule_stats_sum;
    ALTER TABLE automation_rule_stats ADD PRIMARY KEY (tenant_id, rule_id);
    DROP TABLE rule_stats_sum;
  `)
}
