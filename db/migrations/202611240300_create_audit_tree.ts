import type { Knex } from 'knex'

// The RFC 9162 Merkle tree over each tenant's audit chain (lib/audit/merkle.ts): leaf i is
// SHA-256(0x00 || chain hash of the event with sequence i + 1), a node SHA-256(0x01 || left ||
// right). Stored: every complete subtree of level >= 1 (leaves derive from audit_events.hash) and,
// on the chain head, the frontier (the complete subtrees a tree of head.sequence leaves is made
// of), so that the sequencer appends without reading nodes.
//
// audit_tree_rebuild(tenant) builds a tenant's tree from its sequenced events, one set-based
// statement per level (about 2n rows read and n written); it backfills existing chains here and
// rebuilds a tree on request (the bench seeds with it). It holds the chain head lock.
export async function up (knex: Knex): Promise<void> {
  await knex.raw(String.raw`
    CREATE TABLE audit_tree_nodes (
      tenant_id text NOT NULL,
      level smallint NOT NULL CHECK (level BETWEEN 1 AND 62),
      idx bigint NOT NULL CHECK (idx >= 0),
      hash bytea NOT NULL,
      CONSTRAINT audit_tree_nodes_pkey PRIMARY KEY (tenant_id, level, idx)
    );
    -- tree_size is the size the frontier belongs to; it differs from sequence only when something
    -- that does not know the tree (a process of an older release) moved the head: the sequencer
    -- then rebuilds before it appends.
    ALTER TABLE audit_heads ADD COLUMN tree_frontier bytea[] NOT NULL DEFAULT '{}', ADD COLUMN tree_size bigint NOT NULL DEFAULT 0;

    CREATE FUNCTION audit_tree_rebuild(p_tenant text) RETURNS bigint LANGUAGE plpgsql AS $fn$
    DECLARE
      n bigint;
      lv int := 1;
      f bytea[];
    BEGIN
      SELECT sequence INTO n FROM audit_heads WHERE tenant_id = p_tenant FOR UPDATE;
      IF n IS NULL THEN RETURN 0; END IF;
      DELETE FROM audit_tree_nodes WHERE tenant_id = p_tenant;
      -- Level 1 pairs leaves 2i and 2i+1 (sequences 2i+1, 2i+2); level l pairs nodes of level l-1.
      -- A sequence whose row is gone (a damaged chain, which /proof reports) counts as an empty
      -- leaf input, as lib/audit reads it: the tree covers the chain as stored and never blocks.
      INSERT INTO audit_tree_nodes (tenant_id, level, idx, hash)
        SELECT p_tenant, 1, (s - 1) / 2, sha256('\x01'::bytea || string_agg(sha256('\x00'::bytea || coalesce(decode(e.hash, 'hex'), '')), ''::bytea ORDER BY s))
        FROM generate_series(1, (n >> 1) * 2) s
          LEFT JOIN audit_events e ON e.tenant_id = p_tenant AND e.sequence = s
        GROUP BY (s - 1) / 2;
      WHILE (n >> (lv + 1)) > 0 LOOP
        lv := lv + 1;
        INSERT INTO audit_tree_nodes (tenant_id, level, idx, hash)
          SELECT p_tenant, lv, idx / 2, sha256('\x01'::bytea || string_agg(hash, ''::bytea ORDER BY idx))
          FROM audit_tree_nodes WHERE tenant_id = p_tenant AND level = lv - 1 AND idx < (n >> lv) * 2
          GROUP BY idx / 2;
      END LOOP;
      -- The frontier: complete subtree (l, (n >> l) - 1) for every set bit l of n, largest first.
      SELECT coalesce(array_agg(h ORDER BY l DESC), '{}') INTO f FROM (
        SELECT t.level AS l, t.hash AS h FROM generate_series(1, 62) g(l)
          JOIN audit_tree_nodes t ON t.tenant_id = p_tenant AND t.level = g.l AND t.idx = (n >> g.l) - 1
          WHERE (n >> g.l) & 1 = 1
        UNION ALL
        SELECT 0, sha256('\x00'::bytea || coalesce((SELECT decode(hash, 'hex') FROM audit_events WHERE tenant_id = p_tenant AND sequence = n), ''))
          WHERE n & 1 = 1
      ) x;
      UPDATE audit_heads SET tree_frontier = f, tree_size = n WHERE tenant_id = p_tenant;
      RETURN n;
    END
    $fn$;

    DO $do$
    DECLARE t text;
    BEGIN
      FOR t IN SELECT tenant_id FROM audit_heads WHERE sequence > 0 LOOP
        PERFORM audit_tree_rebuild(t);
      END LOOP;
    END
    $do$;
  `)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw(`
    DROP FUNCTION IF EXISTS audit_tree_rebuild(text);
    ALTER TABLE audit_heads DROP COLUMN IF EXISTS tree_frontier, DROP COLUMN IF EXISTS tree_size;
    DROP TABLE IF EXISTS audit_tree_nodes;
  `)
}
