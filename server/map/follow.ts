// The /map page's follower of the change feed (GET /v1/changes, docs/behaviour.md), as browser
// script: part of /map/page.js. EventSource cannot send an Authorization header, so the stream
// is read with fetch() and a ReadableStream reader, and its server-sent events parsed here.

export const FOLLOW_JS = String.raw`
// followChanges({ path, token, signal, onChange, onStatus }) -> { drop }: reads the feed at path (e.g.
// /v1/changes?layer=poles) as text/event-stream until signal aborts, from its current end
// (since=now: without since the feed starts from the beginning). Each 'change' event's data is
// handed to onChange. After a drop (or 'event: dropped', a consumer too slow) it reconnects
// (0.5 s, doubling to 15 s) from the last cursor (since= and Last-Event-ID), so nothing is
// missed; a refused cursor (400) is dropped and onStatus('restarted') says the page must reload
// what it shows. A stream silent for SILENT_MS (not even a heartbeat, CHANGES_HEARTBEAT_SECONDS,
// 15 s by default) is taken for dead and reconnected.
function followChanges (opts) {
  const SILENT_MS = 60000
  let cursor = null
  let delay = 500
  let current = null
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

  function dispatch (block) {
    let event = 'message'
    let id = null
    const data = []
    for (const line of block.split(/\r?\n/)) {
      if (line === '' || line.startsWith(':')) continue
      const colon = line.indexOf(':')
      const field = colon < 0 ? line : line.slice(0, colon)
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
      if (field === 'event') event = value
      else if (field === 'data') data.push(value)
      else if (field === 'id') id = value
    }
    if (id !== null) cursor = id
    if ((event !== 'change' && event !== 'dropped') || data.length === 0) return
    let change
    try { change = JSON.parse(data.join('\n')) } catch { return } // a malformed event is skipped, not retried forever
    if (change.cursor) cursor = String(change.cursor)
    // dropped: the server cut a consumer that fell behind; the stream ends and resumes from its cursor.
    if (event === 'change') opts.onChange(change)
  }

  async function readOnce () {
    // since=now on a fresh start (absent would replay the feed from the beginning).
    const q = (opts.path.includes('?') ? '&' : '?') + 'since=' + encodeURIComponent(cursor === null ? 'now' : cursor)
    const headers = { Authorization: 'Bearer ' + opts.token(), Accept: 'text/event-stream' }
    if (cursor !== null) headers['Last-Event-ID'] = cursor
    const local = current = new AbortController()
    const stop = () => local.abort()
    opts.signal.addEventListener('abort', stop)
    let watchdog = null
    const arm = () => { clearTimeout(watchdog); watchdog = setTimeout(stop, SILENT_MS) }
    try {
      arm()
      const r = await fetch(opts.path + q, { headers, signal: local.signal, cache: 'no-store' })
      if (!r.ok) {
        const text = (await r.text()).slice(0, 200)
        // A cursor the feed no longer answers for: start afresh, and the page reloads its view.
        if (cursor !== null && (r.status === 400 || r.status === 410)) { cursor = null; opts.onStatus('restarted'); return }
        throw new Error('change feed: ' + r.status + ' ' + text)
      }
      delay = 500
      opts.onStatus('live', cursor)
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader()
      let buffer = ''
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        arm()
        buffer += value
        let end
        while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '')
          dispatch(block)
        }
      }
    } finally {
      clearTimeout(watchdog)
      opts.signal.removeEventListener('abort', stop)
    }
  }

  ;(async () => {
    while (!opts.signal.aborted) {
      let error = null
      try { await readOnce() } catch (err) { error = String(err.message || err) }
      if (opts.signal.aborted) return
      opts.onStatus('reconnecting', cursor, error)
      await sleep(delay)
      delay = Math.min(delay * 2, 15000)
    }
  })()
  // drop() cuts the stream in use as a network failure would (a person, or a test, can see the
  // follower resume).
  return { drop: () => { if (current) current.abort() } }
}
`
