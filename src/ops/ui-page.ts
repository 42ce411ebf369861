/**
 * The built-in web UI: one self-contained HTML document (inline CSS and plain DOM JS, no external
 * requests; its own Content-Security-Policy forbids them) with two views:
 *
 *   Monitoring  nodes, health, operations (successes and failures apart), throughput, pool, and
 *               latency percentiles (marked when from few samples): ui-monitor.ts
 *   Blobs       list by prefix with paging, upload (raw, with policy and labels), metadata,
 *               download, delete: ui-blobs.ts
 *
 * It is served at GET / on the metrics listener and at GET /ui/ on the API port. Each copy runs
 * the views its listener serves and links to the other listener for the rest: the blob browser
 * calls the blob API on its own origin (no CORS, no blob API on the metrics port), monitoring
 * polls the metrics routes on its own. In the `same` layout both run in one page. A 401 shows a
 * token field; the token is kept in sessionStorage only and sent as a bearer token.
 */
import { UI_BLOBS } from './ui-blobs.js';
import { UI_COMMON } from './ui-common.js';
import { UI_MONITOR } from './ui-monitor.js';
import { UI_STYLE } from './ui-style.js';

/** What a copy of the page may do on its listener, and where the other listener is. */
export interface UiConfig {
  /** This listener serves /api/v1/metrics (metrics listener, or the API port in `same`). */
  readonly metricsHere: boolean;
  /** This listener serves /v1/blobs (the API port). */
  readonly apiHere: boolean;
  /** Ports of the node's listeners, for links (the page keeps its own host name). */
  readonly apiPort: number | undefined;
  readonly metricsPort: number | undefined;
}

const HEAD = String.raw`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; connect-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'">
<meta name="color-scheme" content="light dark">
<link rel="icon" href="data:,">
<title>blobstore</title>
<style>
`;

const BODY = String.raw`<body>
<header>
  <h1><span aria-hidden="true">&#9679;</span> blobstore</h1>
  <nav class="tabs" aria-label="views"><button type="button" id="tab-monitor" aria-controls="monitor-view">Monitoring</button><button type="button" id="tab-blobs" aria-controls="blobs-view">Blobs</button></nav>
  <div class="ident"><span class="muted">node</span> <span id="node-id">&hellip;</span> <span id="node-state" class="pill warn">loading</span></div>
  <div class="muted">up <span id="uptime">&ndash;</span></div>
  <div class="status"><span id="live-dot" class="dot"></span><span id="status" role="status" aria-live="polite">connecting&hellip;</span><span id="updated"></span></div>
</header>
<form id="auth" hidden>
  <label for="token">This node needs a bearer token:</label>
  <input id="token" type="password" autocomplete="off" size="32">
  <button type="submit">Use token</button>
</form>
<div id="monitor-view">
<div id="banner" role="alert" hidden></div>
<p id="monitor-away" class="away" hidden>Monitoring is served by this node's metrics listener: <span id="monitor-away-link"></span></p>
<main id="main" aria-busy="true">
  <section class="c4" aria-labelledby="h-nodes"><h2 id="h-nodes">Nodes</h2><p id="cluster-summary" class="muted"></p><div id="nodes"></div></section>
  <section class="c2" aria-labelledby="h-health"><h2 id="h-health">Health</h2>
    <div class="kv"><div><span>node</span><b id="health-node">&ndash;</b></div><div><span>backend</span><b id="health-backend">&ndash;</b></div></div>
    <h3>Peers</h3><div id="peers"></div></section>
  <section class="c2" aria-labelledby="h-ops"><h2 id="h-ops">Operations</h2>
    <table aria-label="operation counters (successful and failed) and rates">
      <thead><tr><th scope="col">operation</th><th scope="col">ok</th><th scope="col">failed</th><th scope="col">per second</th></tr></thead>
      <tbody id="ops"></tbody></table>
    <svg class="spark" id="ops-spark" viewBox="0 0 100 40" preserveAspectRatio="none" role="img" aria-label="operations per second, last two minutes"></svg></section>
  <section class="c2" aria-labelledby="h-bytes"><h2 id="h-bytes">Throughput</h2>
    <div class="kv"><div><span>written</span><b class="big" id="bytes-written-rate">&ndash;</b><div class="muted" id="bytes-written">&ndash;</div></div>
      <div><span>read</span><b class="big" id="bytes-read-rate">&ndash;</b><div class="muted" id="bytes-read">&ndash;</div></div></div>
    <svg class="spark tall" id="bytes-spark" viewBox="0 0 100 40" preserveAspectRatio="none" role="img" aria-label="bytes per second, last two minutes"></svg></section>
  <section class="c2" aria-labelledby="h-run"><h2 id="h-run">Worker pool and event loop</h2>
    <div class="kv"><div><span>threads</span><b class="big" id="pool-threads">&ndash;</b></div><div><span>queued tasks</span><b class="big" id="pool-queue">&ndash;</b></div></div>
    <h3>utilisation <b id="pool-util">&ndash;</b></h3>
    <div class="bar" aria-hidden="true"><i id="pool-bar" style="width:0"></i></div>
    <h3>event-loop lag p50 / p99</h3><b id="loop-lag">&ndash;</b></section>
  <section class="c3" aria-labelledby="h-lat"><h2 id="h-lat">Latency by operation</h2><div id="lat-ops"></div></section>
  <section class="c3" aria-labelledby="h-stage"><h2 id="h-stage">Latency by stage</h2><div id="lat-stages"></div></section>
</main>
</div>
<div id="blobs-view" hidden>
<p id="blobs-away" class="away" hidden>The blob browser runs beside the blob API, on the node's API port: <span id="blobs-away-link"></span></p>
<div id="blobs">
  <section aria-labelledby="h-list"><h2 id="h-list">Blobs on this node</h2>
    <form id="blob-search">
      <label for="blob-prefix">id prefix</label><input id="blob-prefix" size="18" autocomplete="off" spellcheck="false">
      <label for="blob-limit">per page</label><input id="blob-limit" type="number" min="1" max="1000" value="50" style="width:5rem">
      <button type="submit">List</button>
    </form>
    <table id="blob-list" aria-label="blob ids"><thead><tr><th scope="col">id</th></tr></thead><tbody id="blob-rows"></tbody></table>
    <div class="pager"><button type="button" class="secondary" id="blob-prev" disabled>Previous page</button><button type="button" class="secondary" id="blob-next" disabled>Next page</button><span id="blob-page" class="muted"></span></div>
  </section>
  <div>
    <section aria-labelledby="h-upload"><h2 id="h-upload">Upload</h2>
      <form id="upload">
        <label for="upload-file">file</label><input id="upload-file" type="file">
        <label for="upload-policy">policy</label><select id="upload-policy"></select>
        <label for="upload-labels" style="width:100%">labels, key=value per line</label><textarea id="upload-labels" spellcheck="false"></textarea>
        <button type="submit">Upload</button>
      </form>
    </section>
    <section id="blob-detail" aria-labelledby="h-detail" hidden><h2 id="h-detail">Blob</h2>
      <dl class="meta" id="blob-meta"></dl>
      <button type="button" id="blob-download">Download</button> <button type="button" class="danger" id="blob-delete">Delete</button>
    </section>
    <p id="blob-status" role="status" aria-live="polite"></p>
  </div>
</div>
</div>
`;

const SCRIPT_HEAD = String.raw`
(function () {
  'use strict';
  var POLL_MS = 2000, TIMEOUT_MS = 5000, HISTORY = 60, TOKEN_KEY = 'blobstore.token';
  var OPS = ['put', 'get', 'delete', 'stat', 'list'];
  var STAGES = ['receive', 'hash', 'write', 'fsync', 'index', 'read', 'verify', 'respond'];
  var prev = null, lastOk = null, detailOn = true, clusterOn = true;
  var opsHistory = [], bytesHistory = [];
  var CONFIG = JSON.parse(document.getElementById('ui-config').textContent);
`;

const SCRIPT_TAIL = String.raw`
  // Views: #blobs shows the blob browser; the API port's copy opens on it when it has no metrics.
  function show(view) {
    var blobs = view === 'blobs';
    $('monitor-view').hidden = blobs;
    $('blobs-view').hidden = !blobs;
    $('tab-monitor').setAttribute('aria-selected', String(!blobs));
    $('tab-blobs').setAttribute('aria-selected', String(blobs));
    if (blobs) startBlobs();
  }
  $('tab-monitor').addEventListener('click', function () { history.replaceState(null, '', '#monitor'); show('monitor'); });
  $('tab-blobs').addEventListener('click', function () { history.replaceState(null, '', '#blobs'); show('blobs'); });
  // A new token restarts the monitoring polls (the generation ends the old chain) and the list.
  $('auth').addEventListener('submit', function (ev) {
    ev.preventDefault();
    setToken($('token').value.trim());
    $('token').value = '';
    askToken(false);
    // The prompt that asked for it is answered.
    if (blobsStarted) say('', '');
    if (CONFIG.metricsHere) loop();
    if (blobsStarted && CONFIG.apiHere) listBlobs();
  });
  startMonitor();
  show(location.hash === '#blobs' || (!CONFIG.metricsHere && location.hash !== '#monitor') ? 'blobs' : 'monitor');
})();
`;

/** The page for one listener, with its configuration as a JSON data block. */
export function uiPage(config: UiConfig): string {
  const json = JSON.stringify(config).replace(/</g, '\\u003c');
  return `${HEAD}${UI_STYLE}</style>
</head>
${BODY}<script type="application/json" id="ui-config">${json}</script>
<script>${SCRIPT_HEAD}${UI_COMMON}${UI_MONITOR}${UI_BLOBS}${SCRIPT_TAIL}</script>
</body>
</html>
`;
}
