/**
 * The built-in web UI, served at GET / on the metrics listener: one self-contained HTML document
 * (inline CSS and plain DOM JS, no external requests; its own Content-Security-Policy forbids
 * them). It polls, with relative URLs so both listener layouts work:
 *
 *   api/v1/metrics          every 2 s; the spec's JSON snapshot (a failure shows the error state)
 *   api/v1/metrics/detail   every 2 s; stage and operation percentiles, pool, event-loop lag
 *   v1/cluster/state        every 2 s while the snapshot counts more than one node; a 404/405/501
 *                           stops asking; without it the page shows the local node from the snapshot
 *
 * The snapshot is asked first, the other two after it, in parallel. A 401 shows a token field; the token is kept in sessionStorage and sent as a bearer token.
 * Rates are counter differences between two polls divided by the time between them.
 * The script avoids backticks and dollar-brace so it can live in this template literal.
 */
export const UI_PAGE: string = String.raw`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; connect-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'">
<meta name="color-scheme" content="light dark">
<link rel="icon" href="data:,">
<title>blobstore</title>
<style>
:root { --bg:#f4f6f9; --card:#fff; --fg:#1b2130; --muted:#5d6778; --line:#e2e6ec; --track:#e9edf2;
  --accent:#3461e0; --ok:#188a4c; --warn:#b27b00; --bad:#cc3b3b; --okbg:#e3f5eb; --warnbg:#fbf1d9; --badbg:#fbe5e5; }
@media (prefers-color-scheme: dark) {
  :root { --bg:#0e1116; --card:#161b23; --fg:#e4e8ef; --muted:#97a1b2; --line:#262d39; --track:#232a35;
    --accent:#7ea2ff; --ok:#43d08a; --warn:#f1b631; --bad:#ff7070; --okbg:#143224; --warnbg:#3a2e10; --badbg:#3d1b1b; }
}
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--fg); font:14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
header { display:flex; flex-wrap:wrap; align-items:center; gap:.6rem 1.2rem; padding:.65rem 1.4rem; background:var(--card); border-bottom:1px solid var(--line); }
h1 { font-size:1.15rem; margin:0; letter-spacing:.02em; }
h1 span { color:var(--accent); }
h2 { font-size:.8rem; margin:0 0 .55rem; text-transform:uppercase; letter-spacing:.08em; color:var(--muted); }
h3 { font-size:.85rem; margin:.8rem 0 .35rem; color:var(--muted); font-weight:600; }
.ident { display:flex; align-items:center; gap:.6rem; font-weight:600; }
.muted { color:var(--muted); font-weight:400; }
.status { margin-left:auto; display:flex; align-items:center; gap:.5rem; color:var(--muted); }
.dot { width:.6rem; height:.6rem; border-radius:50%; background:var(--muted); display:inline-block; flex:none; }
.dot.ok { background:var(--ok); } .dot.bad { background:var(--bad); } .dot.warn { background:var(--warn); }
.pill { display:inline-block; padding:.05rem .55rem; border-radius:1rem; font-size:.75rem; font-weight:600; text-transform:uppercase; letter-spacing:.04em; }
.pill.ok { background:var(--okbg); color:var(--ok); } .pill.warn { background:var(--warnbg); color:var(--warn); } .pill.bad { background:var(--badbg); color:var(--bad); }
#banner { margin:1rem 1.4rem 0; padding:.6rem .9rem; border-radius:.5rem; background:var(--badbg); color:var(--bad); font-weight:600; }
#auth { display:flex; gap:.5rem; align-items:center; margin:1rem 1.4rem 0; }
#auth[hidden], #banner[hidden] { display:none; }
input, button { font:inherit; padding:.3rem .6rem; border-radius:.4rem; border:1px solid var(--line); background:var(--card); color:var(--fg); }
button { background:var(--accent); color:#fff; border-color:var(--accent); cursor:pointer; }
main { display:grid; grid-template-columns:repeat(6, 1fr); gap:.8rem; padding:.8rem 1.4rem 1.2rem; }
main.stale section { opacity:.55; }
section { background:var(--card); border:1px solid var(--line); border-radius:.7rem; padding:.75rem 1.1rem; min-width:0; }
#cluster-summary { margin:0 0 .2rem; }
#lat-ops, #lat-stages { overflow-x:auto; }
.c2 { grid-column:span 2; } .c3 { grid-column:span 3; } .c4 { grid-column:span 4; }
@media (max-width: 1100px) { main { grid-template-columns:1fr 1fr; } .c2 { grid-column:span 1; } .c3, .c4 { grid-column:span 2; } }
@media (max-width: 700px) { main { grid-template-columns:1fr; } .c2, .c3, .c4 { grid-column:auto; } }
table { width:100%; border-collapse:collapse; font-variant-numeric:tabular-nums; }
th, td { padding:.17rem .4rem; text-align:right; border-bottom:1px solid var(--line); white-space:nowrap; }
th { font-size:.75rem; color:var(--muted); font-weight:600; }
th:first-child, td:first-child { text-align:left; }
tbody th { font-size:inherit; color:var(--fg); font-weight:600; }
tr:last-child > * { border-bottom:0; }
.big { font-size:1.5rem; font-weight:650; font-variant-numeric:tabular-nums; }
.kv { display:grid; grid-template-columns:repeat(auto-fit, minmax(120px, 1fr)); gap:.6rem; }
.kv > div > span { display:block; color:var(--muted); font-size:.75rem; }
.bar { height:.55rem; background:var(--track); border-radius:.3rem; overflow:hidden; margin:.3rem 0 .15rem; }
.bar i { display:block; height:100%; background:var(--accent); border-radius:.3rem; }
.bar i.warn { background:var(--warn); } .bar i.bad { background:var(--bad); }
.node { padding:.5rem 0; border-bottom:1px solid var(--line); }
.node:last-child { border-bottom:0; }
.node .row { display:flex; gap:.6rem; align-items:baseline; flex-wrap:wrap; }
.node .row .name { font-weight:650; }
.node .row .right { margin-left:auto; color:var(--muted); font-variant-numeric:tabular-nums; }
ul.peers { list-style:none; margin:0; padding:0; display:grid; grid-template-columns:repeat(auto-fill, minmax(150px, 1fr)); gap:.3rem .8rem; }
ul.peers li { display:flex; align-items:center; gap:.45rem; }
.lat { position:relative; width:7.5rem; height:.55rem; background:var(--track); border-radius:.3rem; }
.lat i { position:absolute; top:0; bottom:0; background:var(--accent); border-radius:.3rem; min-width:3px; opacity:.85; }
.lat b { position:absolute; top:-2px; bottom:-2px; width:2px; background:var(--fg); }
.scale { display:flex; justify-content:space-between; width:7.5rem; font-weight:400; margin-left:auto; font-size:.65rem; color:var(--muted); }
svg.spark { width:100%; height:36px; display:block; margin-top:.5rem; }
svg.spark.tall { height:64px; }
svg.spark polyline { fill:none; stroke:var(--accent); stroke-width:1.5; vector-effect:non-scaling-stroke; }
svg.spark polygon { fill:var(--accent); opacity:.12; }
.empty { color:var(--muted); font-style:italic; margin:0; }
</style>
</head>
<body>
<header>
  <h1><span aria-hidden="true">&#9679;</span> blobstore</h1>
  <div class="ident"><span class="muted">node</span> <span id="node-id">&hellip;</span> <span id="node-state" class="pill warn">loading</span></div>
  <div class="muted">up <span id="uptime">&ndash;</span></div>
  <div class="status"><span id="live-dot" class="dot"></span><span id="status" role="status" aria-live="polite">connecting&hellip;</span><span id="updated"></span></div>
</header>
<div id="banner" role="alert" hidden></div>
<form id="auth" hidden>
  <label for="token">This node needs a bearer token:</label>
  <input id="token" type="password" autocomplete="off" size="32">
  <button type="submit">Use token</button>
</form>
<main id="main" aria-busy="true">
  <section class="c4" aria-labelledby="h-nodes"><h2 id="h-nodes">Nodes</h2><p id="cluster-summary" class="muted"></p><div id="nodes"></div></section>
  <section class="c2" aria-labelledby="h-health"><h2 id="h-health">Health</h2>
    <div class="kv"><div><span>node</span><b id="health-node">&ndash;</b></div><div><span>backend</span><b id="health-backend">&ndash;</b></div></div>
    <h3>Peers</h3><div id="peers"></div></section>
  <section class="c2" aria-labelledby="h-ops"><h2 id="h-ops">Operations</h2>
    <table aria-label="operation counters and rates">
      <thead><tr><th scope="col">operation</th><th scope="col">total</th><th scope="col">per second</th></tr></thead>
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
<script>
(function () {
  'use strict';
  var POLL_MS = 2000, TIMEOUT_MS = 5000, HISTORY = 60, TOKEN_KEY = 'blobstore.token';
  var OPS = ['put', 'get', 'delete', 'stat', 'list'];
  var STAGES = ['receive', 'hash', 'write', 'fsync', 'index', 'read', 'verify', 'respond'];
  var prev = null, lastOk = null, detailOn = true, clusterOn = true;
  var opsHistory = [], bytesHistory = [];

  function $(id) { return document.getElementById(id); }
  function num(v) { var n = Number(v); return isFinite(n) ? n : 0; }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function text(id, value) { var e = $(id); if (e.textContent !== value) e.textContent = value; }
  function fmtInt(n) { return Math.round(n).toLocaleString('en-US'); }
  function count(n, noun) { return fmtInt(n) + ' ' + noun + (Math.round(n) === 1 ? '' : 's'); }
  function fmtRate(r) { return r === null ? '\u2013' : r >= 100 || r === 0 ? fmtInt(r) : r.toFixed(1); }
  function percent(f) { return f > 0 && f < 0.001 ? '<0.1%' : (f * 100).toFixed(1) + '%'; }
  function fmtBytes(n) {
    var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'], i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? String(Math.round(n)) : n.toFixed(n >= 100 ? 0 : 1)) + ' ' + units[i];
  }
  // Thresholds sit just below each unit so that rounding never prints "1000 \u00b5s".
  function fmtSeconds(s) {
    if (!(s > 0)) return '\u2013';
    if (s < 0.0009995) return Math.round(s * 1e6) + ' \u00b5s';
    if (s < 0.9995) return (s * 1e3).toFixed(s < 0.0099995 ? 2 : s < 0.099995 ? 1 : 0) + ' ms';
    return s.toFixed(2) + ' s';
  }
  function fmtUptime(s) {
    var d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
    return d ? d + 'd ' + h + 'h' : h ? h + 'h ' + m + 'm' : m ? m + 'm ' + Math.floor(s % 60) + 's' : Math.floor(s) + 's';
  }
  function tone(state) {
    var s = String(state).toLowerCase();
    return /active|online|up/.test(s) ? 'ok' : /offline|down|dead|fail/.test(s) ? 'bad' : 'warn';
  }
  function pill(label, kind) { return el('span', 'pill ' + kind, label); }
  function bar(fraction, label) {
    var b = el('div', 'bar'), i = el('i', fraction > 0.9 ? 'bad' : fraction > 0.75 ? 'warn' : '');
    i.style.width = (Math.min(1, Math.max(0, fraction)) * 100).toFixed(1) + '%';
    if (fraction > 0) i.style.minWidth = '3px';
    b.setAttribute('role', 'meter');
    b.setAttribute('aria-label', label);
    b.setAttribute('aria-valuemin', '0');
    b.setAttribute('aria-valuemax', '100');
    b.setAttribute('aria-valuenow', (fraction * 100).toFixed(0));
    b.appendChild(i);
    return b;
  }

  function token() { try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch (e) { return ''; } }
  async function request(path) {
    var headers = { Accept: 'application/json' }, t = token();
    if (t) headers.Authorization = 'Bearer ' + t;
    var ctl = new AbortController(), timer = setTimeout(function () { ctl.abort(); }, TIMEOUT_MS);
    try {
      var res = await fetch(path, { headers: headers, signal: ctl.signal, cache: 'no-store' });
      if (!res.ok) { var err = new Error(path + ' answered ' + res.status); err.status = res.status; throw err; }
      return await res.json();
    } catch (e) {
      if (e && e.name === 'AbortError') throw new Error(path + ' timed out');
      throw e;
    } finally { clearTimeout(timer); }
  }
  // 404/405/501: the endpoint does not exist on this listener; stop asking for it.
  function absent(err) { return err && (err.status === 404 || err.status === 405 || err.status === 501); }

  function renderNodes(snap, cluster) {
    var c = snap.cluster || {}, st = snap.storage || {}, h = snap.health || {}, nodes;
    if (cluster && Array.isArray(cluster.nodes) && cluster.nodes.length) {
      nodes = cluster.nodes;
    } else {
      nodes = [{ node_id: snap.nodeId, address: '', state: h.nodeUp ? 'active' : 'offline',
        capacity_bytes: st.totalBytes, used_bytes: st.usedBytes, blob_count: st.blobCount }];
    }
    var ring = cluster && cluster.ring_version !== undefined ? cluster.ring_version : c.ringVersion;
    text('cluster-summary', count(num(c.nodesTotal) || nodes.length, 'node') + ' \u00b7 ' + fmtInt(num(c.nodesActive)) +
      ' active \u00b7 ' + fmtInt(num(c.nodesOffline)) + ' offline \u00b7 ring version ' + fmtInt(num(ring)) +
      (!cluster && num(c.nodesTotal) > 1 ? ' \u00b7 cluster view unavailable, showing this node' : ''));
    var list = nodes.map(function (n) {
      var d = el('div', 'node'), row = el('div', 'row'), total = num(n.capacity_bytes), used = num(n.used_bytes);
      var state = String(n.state || 'unknown').replace(/^NODE_STATE_/i, '').toLowerCase();
      row.appendChild(el('span', 'name', n.node_id));
      if (n.node_id === snap.nodeId) row.appendChild(el('span', 'muted', '(this node)'));
      row.appendChild(pill(state, tone(state)));
      if (n.address) row.appendChild(el('span', 'muted', n.address));
      row.appendChild(el('span', 'right', fmtBytes(used) + ' of ' + fmtBytes(total) +
        (total ? ' (' + percent(used / total) + ')' : '') + ' \u00b7 ' + count(num(n.blob_count), 'blob')));
      d.appendChild(row);
      d.appendChild(bar(total ? used / total : 0, 'capacity used on ' + n.node_id));
      return d;
    });
    $('nodes').replaceChildren.apply($('nodes'), list);
  }

  function renderHealth(snap) {
    var h = snap.health || {}, peers = h.peerHealth || {}, ids = Object.keys(peers).sort();
    $('health-node').replaceChildren(pill(h.nodeUp ? 'up' : 'down', h.nodeUp ? 'ok' : 'bad'));
    $('health-backend').replaceChildren(pill(h.backendHealthy ? 'healthy' : 'failing', h.backendHealthy ? 'ok' : 'bad'));
    text('node-state', h.nodeUp ? 'up' : 'down');
    $('node-state').className = 'pill ' + (h.nodeUp ? 'ok' : 'bad');
    if (!ids.length) { $('peers').replaceChildren(el('p', 'empty', 'no peers')); return; }
    var ul = el('ul', 'peers');
    ids.forEach(function (id) {
      var li = el('li'), up = peers[id] === true;
      li.appendChild(el('span', 'dot ' + (up ? 'ok' : 'bad')));
      li.appendChild(el('span', '', id));
      li.appendChild(el('span', 'muted', up ? 'online' : 'offline'));
      ul.appendChild(li);
    });
    $('peers').replaceChildren(ul);
  }

  function spark(id, values) {
    var svg = $(id), max = Math.max.apply(null, values.concat([1e-9])), n = values.length;
    if (n < 2) { svg.replaceChildren(); return; }
    var pts = values.map(function (v, i) { return (i / (n - 1) * 100).toFixed(2) + ',' + (38 - v / max * 34).toFixed(2); });
    var ns = 'http://www.w3.org/2000/svg', line = document.createElementNS(ns, 'polyline'), area = document.createElementNS(ns, 'polygon');
    line.setAttribute('points', pts.join(' '));
    area.setAttribute('points', '0,40 ' + pts.join(' ') + ' 100,40');
    svg.replaceChildren(area, line);
  }
  function push(list, v) { list.push(v); if (list.length > HISTORY) list.shift(); }

  function renderThroughput(snap, now) {
    var t = snap.throughput || {}, ops = t.operations || {}, dt = prev ? (now - prev.at) / 1000 : 0;
    var fresh = prev && dt > 0 && num(snap.uptime) >= prev.uptime;
    function rate(cur, old) { return fresh ? Math.max(0, cur - old) / dt : null; }
    var rows = [], totalRate = 0;
    OPS.forEach(function (op) {
      var r = rate(num(ops[op]), prev ? prev.ops[op] : 0);
      totalRate += r || 0;
      var tr = el('tr'), th = el('th', '', op), total = el('td', '', fmtInt(num(ops[op]))), per = el('td', '', fmtRate(r));
      th.scope = 'row'; total.id = 'op-' + op + '-total'; per.id = 'op-' + op + '-rate';
      tr.append(th, total, per);
      rows.push(tr);
    });
    $('ops').replaceChildren.apply($('ops'), rows);
    var read = num(t.bytesReadTotal), written = num(t.bytesWrittenTotal);
    var rr = rate(read, prev ? prev.read : 0), wr = rate(written, prev ? prev.written : 0);
    text('bytes-read', fmtBytes(read) + ' total');
    text('bytes-written', fmtBytes(written) + ' total');
    text('bytes-read-rate', rr === null ? '\u2013' : fmtBytes(rr) + '/s');
    text('bytes-written-rate', wr === null ? '\u2013' : fmtBytes(wr) + '/s');
    if (fresh) { push(opsHistory, totalRate); push(bytesHistory, (rr || 0) + (wr || 0)); }
    spark('ops-spark', opsHistory);
    spark('bytes-spark', bytesHistory);
    prev = { at: now, uptime: num(snap.uptime), ops: {}, read: read, written: written };
    OPS.forEach(function (op) { prev.ops[op] = num(ops[op]); });
  }

  // Percentile marks on a log scale from 10 us to 10 s.
  function pos(s) { return Math.min(1, Math.max(0, (Math.log10(Math.max(s, 1e-5)) + 5) / 6)) * 100; }
  function latencyTable(names, data, label) {
    var table = el('table'), head = el('tr'), body = el('tbody');
    [label, 'count', 'p50', 'p95', 'p99', ''].forEach(function (h) { var th = el('th', '', h); th.scope = 'col'; head.appendChild(th); });
    head.lastChild.appendChild(el('div', 'scale', ''));
    ['10\u00b5s', '1ms', '100ms', '10s'].forEach(function (s) { head.lastChild.firstChild.appendChild(el('span', '', s)); });
    var thead = el('thead'); thead.appendChild(head); table.append(thead, body);
    names.forEach(function (name) {
      var d = data[name] || {}, tr = el('tr'), th = el('th', '', name), track = el('div', 'lat'), cell = el('td');
      th.scope = 'row';
      tr.append(th, el('td', '', fmtInt(num(d.count))), el('td', '', fmtSeconds(num(d.p50))), el('td', '', fmtSeconds(num(d.p95))), el('td', '', fmtSeconds(num(d.p99))));
      if (num(d.count) > 0) {
        var range = el('i'), mark = el('b'), a = pos(num(d.p50)), b = pos(num(d.p99));
        range.style.left = a + '%'; range.style.width = Math.max(0, b - a) + '%';
        mark.style.left = pos(num(d.p95)) + '%';
        track.title = name + ': p50 ' + fmtSeconds(num(d.p50)) + ', p95 ' + fmtSeconds(num(d.p95)) + ', p99 ' + fmtSeconds(num(d.p99));
        track.append(range, mark);
      }
      track.setAttribute('aria-hidden', 'true');
      cell.appendChild(track); tr.appendChild(cell); body.appendChild(tr);
    });
    return table;
  }

  function renderDetail(detail) {
    if (!detail) {
      var note = detailOn ? 'waiting for data' : 'not served by this node';
      ['lat-ops', 'lat-stages'].forEach(function (id) { $(id).replaceChildren(el('p', 'empty', note)); });
      return;
    }
    $('lat-ops').replaceChildren(latencyTable(OPS, detail.operations || {}, 'operation'));
    $('lat-stages').replaceChildren(latencyTable(STAGES, detail.stages || {}, 'stage'));
    var pool = detail.pool || {}, lag = detail.eventLoopLagSeconds || {}, u = num(pool.utilisation);
    text('pool-threads', fmtInt(num(pool.threads)));
    text('pool-queue', fmtInt(num(pool.queueDepth)));
    text('pool-util', (u * 100).toFixed(0) + '%');
    $('pool-bar').style.width = (Math.min(1, u) * 100).toFixed(1) + '%';
    text('loop-lag', fmtSeconds(num(lag.p50)) + ' / ' + fmtSeconds(num(lag.p99)));
  }

  function setStatus(ok, message) {
    var when = lastOk ? lastOk.toLocaleTimeString('en-GB') : 'never';
    $('live-dot').className = 'dot ' + (ok ? 'ok' : 'bad');
    // Only the word is live (announced when it changes); the time beside it changes every poll.
    text('status', ok ? 'live' : 'not updating');
    text('updated', (ok ? '\u00b7 updated ' : '\u00b7 last update ') + when);
    $('banner').hidden = ok;
    if (!ok) text('banner', message);
    $('main').classList.toggle('stale', !ok);
  }

  async function poll() {
    var s;
    try {
      s = await request('api/v1/metrics');
    } catch (err) {
      var auth = err.status === 401 || err.status === 403;
      $('auth').hidden = !auth;
      setStatus(false, err.status === 401 ? 'This node needs a bearer token (401): enter one below.' :
        err.status === 403 ? 'The token lacks the read scope (403).' : 'Cannot reach the node: ' + (err.message || err));
      return;
    }
    // A single node has no cluster view to ask for; its own snapshot says all there is.
    var multi = clusterOn && num((s.cluster || {}).nodesTotal) > 1;
    var results = await Promise.allSettled([detailOn ? request('api/v1/metrics/detail') : null, multi ? request('v1/cluster/state') : null]);
    var detail = results[0], cluster = results[1];
    if (detail.status === 'rejected' && absent(detail.reason)) detailOn = false;
    if (cluster.status === 'rejected' && absent(cluster.reason)) clusterOn = false;
    lastOk = new Date();
    $('auth').hidden = true;
    text('node-id', String(s.nodeId));
    text('uptime', fmtUptime(num(s.uptime)));
    renderNodes(s, cluster.status === 'fulfilled' ? cluster.value : null);
    renderHealth(s);
    renderThroughput(s, performance.now());
    renderDetail(detail.status === 'fulfilled' ? detail.value : null);
    $('main').setAttribute('aria-busy', 'false');
    setStatus(true, '');
  }

  // A new token starts a new chain of polls; the generation ends the old one.
  var timer = null, generation = 0;
  async function loop() {
    var mine = ++generation;
    clearTimeout(timer);
    try { await poll(); } catch (e) { setStatus(false, 'Page error: ' + (e && e.message)); }
    if (mine === generation) timer = setTimeout(loop, POLL_MS);
  }
  $('auth').addEventListener('submit', function (ev) {
    ev.preventDefault();
    try { sessionStorage.setItem(TOKEN_KEY, $('token').value.trim()); } catch (e) { /* storage off: nothing to keep */ }
    $('token').value = '';
    loop();
  });
  loop();
})();
</script>
</body>
</html>
`;
