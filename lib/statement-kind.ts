// The kind of an SQL statement, as the `operation` label of database_query_duration_seconds
// (lib/db.ts). A label value must come from a small fixed set: one made from arbitrary SQL text
// (a CTE's name, a column list's first word) would grow the metric without bound.

/** Every value statementKind returns. */
export const STATEMENT_KINDS = ['select', 'insert', 'update', 'delete', 'merge', 'copy', 'begin', 'commit', 'rollback', 'savepoint', 'release', 'other'] as const
export type StatementKind = typeof STATEMENT_KINDS[number]

const KIND_OF_KEYWORD: Readonly<Record<string, StatementKind>> = {
  select: 'select', values: 'select', table: 'select',
  insert: 'insert', update: 'update', delete: 'delete', merge: 'merge', copy: 'copy',
  begin: 'begin', start: 'begin', commit: 'commit', end: 'commit', rollback: 'rollback', abort: 'rollback',
  savepoint: 'savepoint', release: 'release'
}
// What may follow a WITH list: the statement the CTEs serve.
const MAIN_AFTER_WITH = new Set(['select', 'values', 'table', 'insert', 'update', 'delete', 'merge'])

/**
 * The statement's kind: its first keyword, or after a WITH list the keyword of the statement
 * the CTEs serve (`WITH x AS (...) UPDATE ...` is an update). Strings, quoted identifiers,
 * dollar quotes and comments are skipped, and parentheses counted, so no word inside a CTE body
 * or a literal is taken. Anything unrecognised is `other`.
 */
export function statementKind (sql: string): StatementKind {
  // A parenthesised query, `(SELECT ...) UNION (SELECT ...)`, is read from its first word.
  const words = topLevelWords(sql.replace(/^[\s(]+/, ''))
  const first = words.next()
  if (first.done === true) return 'other'
  if (first.value.word !== 'with') return KIND_OF_KEYWORD[first.value.word] ?? 'other'
  // WITH [RECURSIVE] name [(columns)] AS [[NOT] MATERIALIZED] (body) [, ...] main: the main
  // statement's keyword is the first top-level word right after a closing parenthesis.
  for (const { word, afterParen } of words) {
    if (afterParen && MAIN_AFTER_WITH.has(word)) return KIND_OF_KEYWORD[word]
  }
  return 'other'
}

/** The words outside parentheses, lower-cased, each with whether a `)` came just before it. */
function * topLevelWords (sql: string): Generator<{ word: string, afterParen: boolean }> {
  let depth = 0
  let afterParen = false
  let i = 0
  const special = /[()'"$\-/]/g
  while (i < sql.length) {
    if (depth > 0) {
      // Inside parentheses only what opens or closes something matters: jump to it.
      special.lastIndex = i
      if (special.exec(sql) === null) return
      i = special.lastIndex - 1
    }
    const ch = sql[i]
    const skipped = skipNonCode(sql, i)
    if (skipped > i) { i = skipped; continue }
    if (/\s/.test(ch)) { i++; continue }
    if (ch === '(') { depth++; afterParen = false; i++; continue }
    if (ch === ')') { depth = Math.max(0, depth - 1); afterParen = depth === 0; i++; continue }
    if (/[A-Za-z_]/.test(ch)) {
      let j = i + 1
      while (j < sql.length && /[A-Za-z0-9_$]/.test(sql[j])) j++
      if (depth === 0) yield { word: sql.slice(i, j).toLowerCase(), afterParen }
      afterParen = false
      i = j
      continue
    }
    afterParen = false
    i++
  }
}

/** The index after a comment, string, quoted identifier or dollar-quoted text starting at `i`; `i` when none starts there. */
function skipNonCode (sql: string, i: number): number {
  const two = sql.slice(i, i + 2)
  if (two === '--') { const end = sql.indexOf('\n', i); return end === -1 ? sql.length : end + 1 }
  if (two === '/*') { const end = sql.indexOf('*/', i + 2); return end === -1 ? sql.length : end + 2 }
  const ch = sql[i]
  if (ch === "'" || ch === '"') {
    // A doubled quote inside reads as two quoted texts side by side: the same end. In E'...'
    // a backslash escapes the next character.
    const escapes = ch === "'" && (sql[i - 1] === 'E' || sql[i - 1] === 'e')
    let j = i + 1
    while (j < sql.length && sql[j] !== ch) j += escapes && sql[j] === '\\' ? 2 : 1
    return Math.min(j + 1, sql.length)
  }
  if (ch === '$') {
    const tag = /^\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i, i + 66))?.[0]
    if (tag === undefined) return i
    const end = sql.indexOf(tag, i + tag.length)
    return end === -1 ? sql.length : end + tag.length
  }
  return i
}
