/**
 * The monitoring view of the web UI: it polls, with paths from the root of its listener,
 *
 *   /api/v1/metrics          every 2 s; the spec's JSON snapshot (a failure shows the error state)
 *   /api/v1/metrics/detail   every 2 s; percentiles, failures by operation, pool, event-loop lag
 *   /v1/cluster/state        only where the detail has no cluster view (the detail carries it, at read
 *                            scope); a 404/405/501 stops asking; without either the page shows the
 *                            local node from the snapshot
 *
 * The snapshot is asked first, the other two after it, in parallel. Rates are counter differences
 * between two polls divided by the time between them. The operations panel counts successes and
 * failures apart; percentiles from few samples are marked. On a listener that does not serve the
 * metrics (the API port's /ui/ in the separate layout) it links to the one that does.
 * A chunk of the page's one script (ui-page.ts): no backticks or dollar-brace.
 */
export const UI_MONITOR: string = String.raw`  function renderNodes(snap, cluster) {
    var c = snap.cluster || {}, st = snap.storage || {}, h = snap.health || {}, nodes;
    if (cluster && Array.isArray(cluster.nodes) && cluster.nodes.length) {
      nodes = cluster.nodes;
    } else {
      nodes = [{ node_id: snap.nodeId, address: '', state: h.nodeUp ? 'active' : 'offline',
        capacity_bytes: st.totalBytes, used_bytes: st.usedBytes, blob_count: st.blobCount }];
    }
    var ring = cluster && cluster.ring_version !== undefined ? cluster.ring_version : c.ringVersion;
    var repl = cluster && cluster.replication, rep = cluster && cluster.repair;
    text('cluster-summary', count(num(c.nodesTotal) || nodes.length, 'node') + ' \u00b7 ' + fmtInt(num(c.nodesActive)) +
      ' active \u00b7 ' + fmtInt(num(c.nodesOffline)) + ' offline \u00b7 ring version ' + fmtInt(num(ring)) +
      (repl ? ' \u00b7 replication queue ' + fmtInt(num(repl.queueDepth)) + (num(repl.queueDepth) ? ' (lag ' + num(repl.lagSeconds).toFixed(1) + ' s)' : '') : '') +
      (rep ? ' \u00b7 repair queue ' + fmtInt(num(rep.queue_depth)) + (num(rep.queue_depth) ? ' (' + fmtBytes(num(rep.bytes_left)) + ' left at ' +
        fmtBytes(num(rep.bytes_per_second)) + '/s, about ' + fmtInt(num(rep.eta_seconds)) + ' s)' : '') +
        ' \u00b7 repair cap ' + (num(rep.rate_limit_bytes_per_second) ? fmtBytes(num(rep.rate_limit_bytes_per_second)) + '/s' : 'none') +
        (num(rep.boosted_until_ms) ? ' (raised)' : '') +
        (num(rep.bytes_repaired) ? ' \u00b7 repaired ' + fmtBytes(num(rep.bytes_repaired)) + ' (' + fmtInt(num(rep.blobs_repaired)) + ' replicas, ' + fmtInt(num(rep.columns_repaired)) + ' columns)' : '') +
        (rep.scrub ? ' \u00b7 scrubbed ' + fmtBytes(num(rep.scrub.bytes_checked)) + (num(rep.scrub.corrupt_found) ? ', ' + fmtInt(num(rep.scrub.corrupt_found)) + ' corrupt' : '') : '') : '') +
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
      if (n.migration) {
        var m = n.migration;
        d.appendChild(el('p', 'muted migration', 'handing its data over: ' + count(num(m.blobs_left), 'blob') + ' (' +
          fmtBytes(num(m.bytes_left)) + ') left at ' + fmtBytes(num(m.bytes_per_second)) + '/s'));
      }
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

  function renderThroughput(snap, detail, now) {
    var t = snap.throughput || {}, ops = t.operations || {}, dt = prev ? (now - prev.at) / 1000 : 0;
    var fresh = prev && dt > 0 && num(snap.uptime) >= prev.uptime;
    function rate(cur, old) { return fresh ? Math.max(0, cur - old) / dt : null; }
    var rows = [], totalRate = 0;
    // Successes and failures apart: the snapshot counts both, the detail says how many failed.
    var failures = detail && detail.failures ? detail.failures : null;
    OPS.forEach(function (op) {
      var r = rate(num(ops[op]), prev ? prev.ops[op] : 0), failed = failures ? num(failures[op]) : null;
      totalRate += r || 0;
      var tr = el('tr'), th = el('th', '', op), per = el('td', '', fmtRate(r));
      var ok = el('td', '', failed === null ? '\u2013' : fmtInt(num(ops[op]) - failed));
      var bad = el('td', failed ? 'failed' : '', failed === null ? '\u2013' : fmtInt(failed));
      th.scope = 'row'; ok.id = 'op-' + op + '-ok'; bad.id = 'op-' + op + '-failed'; per.id = 'op-' + op + '-rate';
      tr.append(th, ok, bad, per);
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
  // A percentile needs enough samples to mean anything: p99 of fewer than 100 is the maximum, and
  // so on. Below these counts the cell is marked (italic, an asterisk, the count in its title).
  var FEW = { p50: 10, p95: 20, p99: 100 };
  function pcell(d, q) {
    var n = num(d.count), few = n > 0 && n < FEW[q], td = el('td', few ? 'few' : '', fmtSeconds(num(d[q])) + (few ? '*' : ''));
    if (few) td.title = q + ' from only ' + count(n, 'sample') + ': a rough estimate';
    return td;
  }
  function latencyTable(names, data, label) {
    var table = el('table'), head = el('tr'), body = el('tbody');
    [label, 'count', 'p50', 'p95', 'p99', ''].forEach(function (h) { var th = el('th', '', h); th.scope = 'col'; head.appendChild(th); });
    head.lastChild.appendChild(el('div', 'scale', ''));
    ['10\u00b5s', '1ms', '100ms', '10s'].forEach(function (s) { head.lastChild.firstChild.appendChild(el('span', '', s)); });
    var thead = el('thead'); thead.appendChild(head); table.append(thead, body);
    names.forEach(function (name) {
      var d = data[name] || {}, tr = el('tr'), th = el('th', '', name), track = el('div', 'lat'), cell = el('td');
      th.scope = 'row';
      tr.append(th, el('td', '', fmtInt(num(d.count))), pcell(d, 'p50'), pcell(d, 'p95'), pcell(d, 'p99'));
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
    var wrap = el('div');
    wrap.appendChild(table);
    var marked = names.some(function (name) { var n = num((data[name] || {}).count); return n > 0 && n < FEW.p99; });
    if (marked) wrap.appendChild(el('p', 'footnote', '* from few samples (p50 under 10, p95 under 20, p99 under 100): a rough estimate'));
    return wrap;
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
      s = await request('/api/v1/metrics');
    } catch (err) {
      askToken(err.status === 401 || err.status === 403);
      setStatus(false, err.status === 401 ? 'This node needs a bearer token (401): enter one below.' :
        err.status === 403 ? 'The token lacks the read scope (403).' : 'Cannot reach the node: ' + (err.message || err));
      return;
    }
    // The detail carries the cluster's view (read scope); /v1/cluster/state (admin) only stands in
    // where the detail has none. A single node has no cluster view; its snapshot says all there is.
    var detail = { status: 'rejected', reason: null };
    if (detailOn) {
      try { detail = { status: 'fulfilled', value: await request('/api/v1/metrics/detail') }; } catch (err) { detail = { status: 'rejected', reason: err }; }
    }
    if (detail.status === 'rejected' && absent(detail.reason)) detailOn = false;
    var fromDetail = detail.status === 'fulfilled' && detail.value && detail.value.cluster;
    var multi = clusterOn && !fromDetail && num((s.cluster || {}).nodesTotal) > 1;
    var cluster = fromDetail ? { status: 'fulfilled', value: fromDetail } : { status: 'rejected', reason: null };
    if (multi) {
      try { cluster = { status: 'fulfilled', value: await request('/v1/cluster/state') }; } catch (err) { cluster = { status: 'rejected', reason: err }; }
    }
    if (cluster.status === 'rejected' && absent(cluster.reason)) clusterOn = false;
    lastOk = new Date();
    askToken(false);
    text('node-id', String(s.nodeId));
    text('uptime', fmtUptime(num(s.uptime)));
    renderNodes(s, cluster.status === 'fulfilled' ? cluster.value : null);
    renderHealth(s);
    renderThroughput(s, detail.status === 'fulfilled' ? detail.value : null, performance.now());
    renderDetail(detail.status === 'fulfilled' ? detail.value : null);
    $('main').setAttribute('aria-busy', 'false');
    setStatus(true, '');
  }

  // Each start of the polls (a new token) begins a new chain; the generation ends the old one.
  var timer = null, generation = 0;
  async function loop() {
    var mine = ++generation;
    clearTimeout(timer);
    try { await poll(); } catch (e) { setStatus(false, 'Page error: ' + (e && e.message)); }
    if (mine === generation) timer = setTimeout(loop, POLL_MS);
  }
  // The monitoring view: polls while this listener serves the metrics, else links to the one that does.
  function startMonitor() {
    if (CONFIG.metricsHere) return loop();
    $('main').hidden = true;
    $('monitor-away').hidden = false;
    $('monitor-away-link').replaceChildren(CONFIG.metricsPort ? link(urlOn(CONFIG.metricsPort, '/'), urlOn(CONFIG.metricsPort, '/')) : el('span', '', 'no metrics listener (MetricsAddr is empty)'));
  }
`;
