// The /map page's HTML, kept in a module so the build (dist/) carries it.

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
  .panel { position: absolute; z-index: 1; background: #fff; padding: 6px 8px; border-radius: 4px; box-shadow: 0 1px 4px #0003; }
  #bar { top: 8px; left: 8px; display: flex; gap: 6px; align-items: center; }
  #bar input { width: 16em; }
  #status { color: #555; }
  #live { color: #999; }
  #live.on { color: #2a9d3a; }
  #notice { top: 45%; left: 50%; transform: translate(-50%, -50%); padding: 12px 16px; font-size: 16px; }
  #legend { bottom: 28px; left: 8px; }
  #legend ul { list-style: none; margin: 4px 0 0; padding: 0; }
  #legend li { display: flex; gap: 6px; align-items: center; }
  #legend i { display: inline-block; width: 12px; height: 12px; border-radius: 50%; border: 1px solid #0004; }
  [hidden] { display: none !important; }
  .props td { padding: 1px 6px 1px 0; vertical-align: top; }
  .props td:first-child { color: #555; }
</style>
</head>
<body>
<div id="map"></div>
<div id="bar" class="panel">
  <label>Layer <select id="layer"></select></label>
  <input id="token" type="password" placeholder="access token (Bearer)">
  <button id="go">Show</button>
  <span id="status" role="status">Loading the map…</span>
  <span id="live" title="change feed: not connected">●</span>
</div>
<div id="notice" class="panel" role="status">Loading…</div>
<div id="legend" class="panel" hidden><strong>Workflow state</strong><ul></ul></div>
<script src="/map/maplibre-gl.js"></script>
<script src="/map/page.js"></script>
</body>
</html>
`
