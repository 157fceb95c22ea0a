import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { STATEMENT_KINDS, statementKind } from '../../lib/statement-kind.js'

// The `operation` label of database_query_duration_seconds: a fixed set, whatever the text.
describe('statementKind', () => {
  const cases: Array<[string, string]> = [
    ['select 1', 'select'],
    ['  SELECT * FROM objects WHERE id = $1', 'select'],
    ['(SELECT 1) UNION (SELECT 2)', 'select'],
    ['VALUES (1), (2)', 'select'],
    ['insert into "objects" ("id") values (?)', 'insert'],
    ['UPDATE objects SET version = version + 1', 'update'],
    ['delete from relations where id = ?', 'delete'],
    ['COPY objects FROM STDIN', 'copy'],
    ['BEGIN;', 'begin'],
    ['START TRANSACTION ISOLATION LEVEL REPEATABLE READ', 'begin'],
    ['COMMIT;', 'commit'],
    ['ROLLBACK TO SAVEPOINT trx2', 'rollback'],
    ['SAVEPOINT trx2', 'savepoint'],
    ['RELEASE SAVEPOINT trx2', 'release'],
    ['SET LOCAL statement_timeout = 5000', 'other'],
    ['NOTIFY settings_changed', 'other'],
    ['LOCK TABLE objects', 'other'],
    ['', 'other'],
    ['   ', 'other'],
    ['-- a comment only', 'other'],
    // What the old first-word-after-a-parenthesis reading labelled `as`, `o` and `values`.
    ['WITH t(a) AS (SELECT 1) SELECT a FROM t', 'select'],
    ['WITH x AS (SELECT count(*) FROM objects o) SELECT * FROM x', 'select'],
    ['with ins as (insert into t (a, b) values (1, 2) returning *) select * from ins', 'select'],
    ['WITH RECURSIVE g(id, depth) AS (SELECT id, 0 FROM objects UNION ALL SELECT r.to_object_id, g.depth + 1 FROM g JOIN relations r ON r.from_object_id = g.id) SELECT * FROM g', 'select'],
    ['WITH cur AS MATERIALIZED (SELECT id FROM objects) UPDATE objects o SET version = 2 FROM cur WHERE o.id = cur.id', 'update'],
    ['WITH a AS (SELECT 1), b AS NOT MATERIALIZED (SELECT 2) DELETE FROM t USING a, b', 'delete'],
    ['WITH inp AS (SELECT * FROM jsonb_to_recordset(?::jsonb) AS x(id uuid)) INSERT INTO objects (id) SELECT id FROM inp', 'insert'],
    // Parentheses, keywords and quotes inside literals, identifiers and comments are not code.
    ["WITH t AS (SELECT ')' AS p, 'it''s' AS q, E'\\') update' AS r) SELECT * FROM t", 'select'],
    ['WITH "weird)name" AS (SELECT 1) /* ) delete */ -- ) update\n SELECT * FROM "weird)name"', 'select'],
    ['WITH t AS (SELECT $tag$ ) delete $tag$ AS x, $$)update$$ AS y) SELECT * FROM t', 'select'],
    ['/* leading */ -- and a line\n  insert into t values (1)', 'insert'],
    ['WITH broken AS (SELECT 1', 'other'],
    ['WITH t AS (SELECT 1) EXPLAIN SELECT 1', 'other'],
    ['as', 'other'],
    ['o', 'other'],
    ['values_of_things', 'other']
  ]
  for (const [sql, kind] of cases) {
    it(`${JSON.stringify(sql.slice(0, 60))} is ${kind}`, () => assert.equal(statementKind(sql), kind))
  }

  it('only ever answers one of STATEMENT_KINDS', () => {
    const words = ['with', 'as', 'select', 'update', 'o', 'values', '(', ')', "'", '"', '$$', '--', '\n', '/*', '*/', ',', 'x', ' ']
    let seed = 7
    const next = () => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed }
    for (let n = 0; n < 2000; n++) {
      const sql = Array.from({ length: next() % 20 }, () => words[next() % words.length]).join(' ')
      assert.ok((STATEMENT_KINDS as readonly string[]).includes(statementKind(sql)), sql)
    }
  })
})
