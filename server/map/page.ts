import { FOLLOW_JS } from './follow.js'

// The /map page's script (its HTML: html.ts), kept in modules so the build (dist/) carries them.

const MAIN_JS = String.raw`
// The /map page: lists the tenant's layers, shows the chosen one's vector tiles (TileJSON from
// the API) over the basemap (/map/basemap.json), fits the layer's bounds, colours features by
// workflow state with a legend of the states in view, shows a clicked feature's properties, and
// follows the change feed for the layer, reloading its tiles after each change. window.mapState
// tells a test (or a curious person) what happened: { layer, loading, ready, empty, error,
// features, legend, basemap, feed: { status, cursor, changes, error }, redraws }; window.mapFeed.drop()
// cuts the change stream, to watch the page resume from its cursor.
(function () {
  const params = new URLSearchParams(location.hash.slice(1))
  const tokenInput = document.getElementById('token')
  const select = document.getElementById('layer')
  const status = document.getElementById('status')
  const notice = document.getElementById('notice')
  const legend = document.getElementById('legend')
  const live = document.getElementById('live')
  tokenInput.value = params.get('token') || sessionStorage.getItem('map-token') || ''
  const token = () => tokenInput.value.trim()
  const state = window.mapState = {
    layer: null, loading: true, ready: false, empty: null, error: null, features: null, legend: [],
    basemap: 'loading', feed: { status: 'off', cursor: null, changes: 0, error: null }, redraws: 0
  }
  const say = (text) => { status.textContent = text }
  const tell = (text) => { notice.textContent = text || ''; notice.hidden = !text }

  const WATER = '#d6e4ec'
  const map = window.map = new maplibregl.Map({
    container: 'map',
    style: {
      version: 8,
      sources: { basemap: { type: 'geojson', data: location.origin + '/map/basemap.json' } },
      layers: [
        { id: 'water', type: 'background', paint: { 'background-color': WATER } },
        { id: 'land', type: 'fill', source: 'basemap', filter: ['==', ['get', 'kind'], 'land'], paint: { 'fill-color': '#f6f4ee' } },
        { id: 'borders', type: 'line', source: 'basemap', filter: ['==', ['get', 'kind'], 'border'], paint: { 'line-color': '#b9b2a4', 'line-width': 0.7 } }
      ]
    },
    center: [0, 20],
    zoom: 1,
    // Every request to the API revalidates (cache: no-cache): tiles are private, max-age=<ttl>, so a
    // reloaded tile would otherwise come from the browser's cache; with its ETag it is a 304 when
    // nothing changed, the new tile when something did.
    transformRequest: (url) => url.startsWith(location.origin)
      ? { url, headers: { Authorization: 'Bearer ' + token() }, cache: 'no-cache' }
      : { url }
  })
  map.on('sourcedata', (e) => { if (e.sourceId === 'basemap' && e.isSourceLoaded && state.basemap === 'loading') state.basemap = 'loaded' })

  async function api (path) {
    const r = await fetch(path, { headers: { Authorization: 'Bearer ' + token() }, cache: 'no-cache' })
    if (!r.ok) throw new Error(path + ': ' + r.status + ' ' + (await r.text()).slice(0, 200))
    return r.json()
  }

  let definitions = {}
  async function listLayers () {
    const page = await api('/v1/layers/definitions?limit=100')
    definitions = Object.fromEntries(page.items.map((l) => [l.slug, l]))
    select.replaceChildren(...page.items.map((l) => new Option(l.name + ' (' + l.slug + ')', l.slug)))
    if (page.items.length === 0) throw new Error('this tenant has no layers yet: POST /v1/layers/definitions (README)')
    const wanted = params.get('layer')
    if (wanted && page.items.some((l) => l.slug === wanted)) select.value = wanted
  }

  // Colours by workflow state: the layer's workflow's states first, in its order, then any other
  // state as it is first seen; the list only grows, so a state keeps its colour while the page lives.
  const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22', '#393b79']
  const NO_STATE = '#7f7f7f'
  let known = []
  const colourOf = (name) => name === null ? NO_STATE : PALETTE[known.indexOf(name) % PALETTE.length]
  async function workflowStates (slug) {
    const typeId = definitions[slug] && definitions[slug].definition.filters && definitions[slug].definition.filters.typeId
    if (!typeId) return []
    try {
      const type = await api('/v1/object-types/' + typeId)
      return type.workflowId ? (await api('/v1/workflows/' + type.workflowId)).states.map((s) => s.name) : []
    } catch { return [] } // a role without objectTypes/workflows read: colours by order of appearance
  }
  function colourExpression () {
    if (known.length === 0) return NO_STATE
    return ['match', ['coalesce', ['get', 'workflowState'], ''], ...known.flatMap((s) => [s, colourOf(s)]), NO_STATE]
  }
  const PAINTS = { fill: 'fill-color', outline: 'line-color', line: 'line-color', point: 'circle-color' }
  function paintByState () {
    for (const [id, prop] of Object.entries(PAINTS)) if (map.getLayer(id)) map.setPaintProperty(id, prop, colourExpression())
  }

  const STYLE_LAYERS = Object.keys(PAINTS)
  function clear () {
    for (const id of STYLE_LAYERS) if (map.getLayer(id)) map.removeLayer(id)
    if (map.getSource('layer')) map.removeSource('layer')
  }

  function addLayer (slug, tj) {
    clear()
    map.addSource('layer', { type: 'vector', tiles: tj.tiles, minzoom: tj.minzoom, maxzoom: tj.maxzoom })
    const src = { source: 'layer', 'source-layer': slug }
    const c = colourExpression()
    map.addLayer({ id: 'fill', type: 'fill', ...src, filter: ['==', ['geometry-type'], 'Polygon'], paint: { 'fill-color': c, 'fill-opacity': 0.3 } })
    map.addLayer({ id: 'outline', type: 'line', ...src, filter: ['==', ['geometry-type'], 'Polygon'], paint: { 'line-color': c, 'line-width': 1.5 } })
    map.addLayer({ id: 'line', type: 'line', ...src, filter: ['==', ['geometry-type'], 'LineString'], paint: { 'line-color': c, 'line-width': 2.5 } })
    map.addLayer({ id: 'point', type: 'circle', ...src, filter: ['==', ['geometry-type'], 'Point'], paint: { 'circle-color': c, 'circle-radius': 6, 'circle-stroke-color': '#fff', 'circle-stroke-width': 1.5 } })
  }

  const tileJson = (slug) => api('/v1/layers/tiles/' + encodeURIComponent(slug) + '.json')
  function fit (tj) {
    const [w, s, e, n] = tj.bounds
    map.fitBounds([[w, s], [e, n]], { padding: 60, maxZoom: 15, duration: 0 })
  }

  // Whether the layer selects any object at all (not only in view): one feature asked for.
  async function isEmpty (slug) {
    const fc = await api('/v1/layers/objects?layer=' + encodeURIComponent(slug) + '&limit=1&fields=typeId')
    return fc.features.length === 0
  }

  // What the loaded tiles hold (about the view): features counted once by id (a feature near a
  // tile's edge is in both tiles), per state; the legend lists the states present, in colour order.
  function summarise () {
    const slug = state.layer
    if (!map.getSource('layer') || !map.isSourceLoaded('layer')) return
    const byId = new Map(map.querySourceFeatures('layer', { sourceLayer: slug }).map((f) => [f.properties.id, f.properties.workflowState ?? null]))
    const counts = new Map()
    for (const s of byId.values()) counts.set(s, (counts.get(s) || 0) + 1)
    const fresh = [...counts.keys()].filter((s) => s !== null && !known.includes(s)).sort()
    if (fresh.length > 0) { known = known.concat(fresh); paintByState() }
    const order = (s) => s === null ? Infinity : known.indexOf(s)
    state.legend = [...counts.entries()].sort((a, b) => order(a[0]) - order(b[0])).map(([s, n]) => ({ state: s, colour: colourOf(s), count: n }))
    legend.querySelector('ul').replaceChildren(...state.legend.map((row) => {
      const li = document.createElement('li')
      const dot = document.createElement('i')
      dot.style.background = row.colour
      li.append(dot, (row.state === null ? '(no state)' : row.state) + ' · ' + row.count)
      return li
    }))
    legend.hidden = state.legend.length === 0
    state.features = byId.size
    tell(state.empty ? 'No features in this layer' : '')
    say(state.empty ? slug + ': no features in this layer' : byId.size === 0 ? slug + ': no features in view' : slug + ': ' + byId.size + ' feature(s) in view; click one for its properties')
  }

  let generation = 0
  let follower = null
  async function show (slug) {
    const gen = ++generation
    Object.assign(state, { layer: slug, loading: true, ready: false, empty: null, features: null, legend: [], error: null })
    tell('Loading ' + slug + '…')
    say(slug + ': loading…')
    // Follow first, then load: a change committed while the tiles load is reported, and redrawn
    // once they are in.
    missed = false
    await follow(slug)
    const [empty, states, tj] = await Promise.all([isEmpty(slug), workflowStates(slug), tileJson(slug)])
    if (gen !== generation) return
    known = states.concat(known.filter((s) => !states.includes(s)))
    state.empty = empty
    addLayer(slug, tj)
    if (!empty) fit(tj)
    history.replaceState(null, '', '#layer=' + encodeURIComponent(slug))
    await idle()
    if (gen !== generation) return
    summarise()
    Object.assign(state, { loading: false, ready: true })
    if (missed) redraw()
  }

  const idle = () => new Promise((resolve) => map.once('idle', resolve))
  // refreshTiles marks the tiles in view expired at once; they are in when the source is loaded
  // again. (Not 'idle': a reload that changes nothing on screen need not render a frame.)
  const reloaded = () => new Promise((resolve) => {
    const check = () => !map.getSource('layer') || map.isSourceLoaded('layer') ? resolve() : setTimeout(check, 50)
    check()
  })
  map.on('idle', () => { if (state.ready) summarise() })

  // Redraw after changes: one reload at a time; changes during one make one more after it.
  let redrawing = null
  let again = false
  function redraw () {
    if (redrawing) { again = true; return }
    redrawing = (async () => {
      const slug = state.layer
      const wasEmpty = state.empty
      map.refreshTiles('layer')
      await reloaded()
      if (wasEmpty || state.features === 0) {
        const empty = await isEmpty(slug)
        if (wasEmpty && !empty) { fit(await tileJson(slug)); await idle() }
        state.empty = empty
      }
      summarise()
      state.redraws++
    })().catch((err) => { state.error = String(err.message || err); say(state.error) }).finally(() => {
      redrawing = null
      if (again) { again = false; redraw() }
    })
  }

  // Another API process may answer with the layer's previous ETag for up to 5 s after a write
  // (lib/layers README, "Caching": counter values a lost announcement leaves behind): one more
  // revalidation after that window, so a change is never left stale on the page.
  let settle = null
  let missed = false
  function onChange (change) {
    state.feed.changes++
    state.feed.cursor = change.cursor ?? state.feed.cursor
    if (!state.ready) { missed = true; return }
    redraw()
    clearTimeout(settle)
    settle = setTimeout(redraw, 5500)
  }

  async function follow (slug) {
    if (follower) follower.abort()
    follower = new AbortController()
    let connected
    const first = new Promise((resolve) => { connected = resolve })
    const setStatus = (s, cursor, error) => {
      Object.assign(state.feed, { status: s, error: error || null })
      live.className = s === 'live' ? 'on' : ''
      live.title = 'change feed: ' + s + (error ? ' (' + error + ')' : '')
      if (s === 'restarted' && state.ready) redraw()
      if (s === 'live' && cursor === null && state.ready) redraw() // a fresh start: what changed meanwhile
      connected()
    }
    state.feed = { status: 'connecting', cursor: null, changes: 0, error: null }
    window.mapFeed = followChanges({ path: '/v1/changes?layer=' + encodeURIComponent(slug), token, signal: follower.signal, onChange, onStatus: setStatus })
    // The feed's first answer (or its failure) lets the page load; a slow one does not hold it up long.
    await Promise.race([first, new Promise((resolve) => setTimeout(resolve, 3000))])
  }

  map.on('click', (e) => {
    const hit = map.queryRenderedFeatures(e.point, { layers: STYLE_LAYERS.filter((id) => map.getLayer(id)) })[0]
    if (!hit) return
    const table = document.createElement('table')
    table.className = 'props'
    for (const [k, v] of Object.entries(hit.properties)) {
      const tr = table.insertRow()
      tr.insertCell().textContent = k
      tr.insertCell().textContent = String(v)
    }
    new maplibregl.Popup({ maxWidth: '360px' }).setLngLat(e.lngLat).setDOMContent(table).addTo(map)
  })

  function fail (err) {
    Object.assign(state, { error: String(err.message || err), loading: false })
    say(state.error)
    tell('')
  }
  async function start () {
    state.error = null
    sessionStorage.setItem('map-token', token())
    try {
      if (!token()) { tell(''); say('paste an access token (npm run token -- --tenant demo)'); return }
      say('Loading layers…')
      await listLayers()
      await show(select.value)
    } catch (err) { fail(err) }
  }
  document.getElementById('go').addEventListener('click', start)
  select.addEventListener('change', () => show(select.value).catch(fail))
  // A tile the API refused (an expired token, a layer deleted meanwhile) is said, not left blank.
  map.on('error', (e) => {
    const m = e && e.error && e.error.message
    if (!m) return
    if (e.sourceId === 'basemap') state.basemap = 'failed'
    state.error = m
    say('could not load ' + (e.sourceId === 'basemap' ? 'the basemap' : 'tiles') + ': ' + m)
  })
  map.on('load', start)
})()
`

export const PAGE_JS = '/* global maplibregl */\n' + FOLLOW_JS + MAIN_JS
