// The /map page's HTML and script, kept in a module so the build (dist/) carries them.

export const PAGE_HTML = String.raw`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Map</title>
<link rel="stylesheet" href="/map/maplibre-gl.css">
<style>
  html, body { margin: 0; height: 100%; font: 14px system-ui, sans-serif; }
  #map { position: absolute; inset: 0; }
  #bar { position: absolute; top: 8px; left: 8px; z-index: 1; background: #fff; padding: 6px 8px; border-radius: 4px; box-shadow: 0 1px 4px #0003; display: flex; gap: 6px; align-items: center; }
  #bar input { width: 16em; }
  #status { color: #555; }
  .props td { padding: 1px 6px 1px 0; vertical-align: top; }
  .props td:first-child { color: #555; }
</style>
</head>
<body>
<div id="map"></div>
<div id="bar">
  <label>Layer <select id="layer"></select></label>
  <input id="token" type="password" placeholder="access token (Bearer)">
  <button id="go">Show</button>
  <span id="status" role="status">Loading the map…</span>
</div>
<script src="/map/maplibre-gl.js"></script>
<script src="/map/page.js"></script>
</body>
</html>
`

export const PAGE_JS = String.raw`/* global maplibregl */
// The /map page: lists the tenant's layers, shows the chosen one's vector tiles (TileJSON from
// the API), fits its bounds, and shows a clicked feature's properties. The status line says what
// is happening: loading, how many features are in view, none, or what failed. window.mapState tells
// a test (or a curious person) what happened: { layer, ready, error, features }.
(function () {
  const params = new URLSearchParams(location.hash.slice(1))
  const tokenInput = document.getElementById('token')
  const select = document.getElementById('layer')
  const status = document.getElementById('status')
  tokenInput.value = params.get('token') || sessionStorage.getItem('map-token') || ''
  const state = window.mapState = { layer: null, ready: false, error: null, features: null }
  const say = (text) => { status.textContent = text }

  const map = window.map = new maplibregl.Map({
    container: 'map',
    style: { version: 8, sources: {}, layers: [{ id: 'background', type: 'background', paint: { 'background-color': '#eef0ea' } }] },
    center: [0, 20],
    zoom: 1,
    transformRequest: (url) => url.startsWith(location.origin)
      ? { url, headers: { Authorization: 'Bearer ' + tokenInput.value.trim() } }
      : { url }
  })

  async function api (path) {
    const r = await fetch(path, { headers: { Authorization: 'Bearer ' + tokenInput.value.trim() } })
    if (!r.ok) throw new Error(path + ': ' + r.status + ' ' + (await r.text()).slice(0, 200))
    return r.json()
  }

  async function listLayers () {
    const page = await api('/v1/layers/definitions?limit=100')
    select.replaceChildren(...page.items.map((l) => new Option(l.name + ' (' + l.slug + ')', l.slug)))
    if (page.items.length === 0) throw new Error('this tenant has no layers yet: POST /v1/layers/definitions (README)')
    const wanted = params.get('layer')
    if (wanted && page.items.some((l) => l.slug === wanted)) select.value = wanted
  }

  const STYLE_LAYERS = ['fill', 'outline', 'line', 'point']
  function clear () {
    for (const id of STYLE_LAYERS) if (map.getLayer(id)) map.removeLayer(id)
    if (map.getSource('layer')) map.removeSource('layer')
  }

  async function show (slug) {
    state.ready = false
    state.layer = slug
    state.features = null
    say(slug + ': loading tiles…')
    const tj = await api('/v1/layers/tiles/' + encodeURIComponent(slug) + '.json')
    clear()
    map.addSource('layer', { type: 'vector', tiles: tj.tiles, minzoom: tj.minzoom, maxzoom: tj.maxzoom })
    const src = { source: 'layer', 'source-layer': slug }
    map.addLayer({ id: 'fill', type: 'fill', ...src, filter: ['==', ['geometry-type'], 'Polygon'], paint: { 'fill-color': '#2b7bb9', 'fill-opacity': 0.25 } })
    map.addLayer({ id: 'outline', type: 'line', ...src, filter: ['==', ['geometry-type'], 'Polygon'], paint: { 'line-color': '#2b7bb9', 'line-width': 1.5 } })
    map.addLayer({ id: 'line', type: 'line', ...src, filter: ['==', ['geometry-type'], 'LineString'], paint: { 'line-color': '#c0392b', 'line-width': 2.5 } })
    map.addLayer({ id: 'point', type: 'circle', ...src, filter: ['==', ['geometry-type'], 'Point'], paint: { 'circle-color': '#d35400', 'circle-radius': 6, 'circle-stroke-color': '#fff', 'circle-stroke-width': 1.5 } })
    if (Array.isArray(tj.bounds)) {
      const [w, s, e, n] = tj.bounds
      map.fitBounds([[w, s], [e, n]], { padding: 60, maxZoom: 15, duration: 0 })
    }
    map.once('idle', () => {
      // A feature near a tile's edge is in both tiles: counted once, by its id.
      const n = new Set(map.querySourceFeatures('layer', { sourceLayer: slug }).map((f) => f.properties.id)).size
      state.features = n
      state.ready = true
      say(n === 0 ? slug + ': no features in view (the layer selects none here yet)' : slug + ': ' + n + ' feature(s) in view; click one for its properties')
    })
    history.replaceState(null, '', '#layer=' + encodeURIComponent(slug))
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

  async function start () {
    state.error = null
    sessionStorage.setItem('map-token', tokenInput.value.trim())
    try {
      if (!tokenInput.value.trim()) { say('paste an access token (npm run token -- --tenant demo)'); return }
      say('Loading layers…')
      await listLayers()
      await show(select.value)
    } catch (err) {
      state.error = String(err.message || err)
      say(state.error)
    }
  }
  document.getElementById('go').addEventListener('click', start)
  select.addEventListener('change', () => show(select.value).catch((err) => { state.error = String(err); say(state.error) }))
  // A tile the API refused (an expired token, a layer deleted meanwhile) is said, not left blank.
  map.on('error', (e) => { const m = e && e.error && e.error.message; if (m) { state.error = m; say('could not load tiles: ' + m) } })
  map.on('load', start)
})()
`
