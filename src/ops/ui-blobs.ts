/**
 * The blob browser view of the web UI, for a listener that serves the blob API (the API port's
 * /ui/, or / in the `same` layout); elsewhere it links there. It calls, with the page's token:
 *
 *   GET    /v1/blobs?prefix&limit&cursor   the list, a page at a time (next_cursor pages on)
 *   GET    /v1/blobs/{id}/stat             a blob's metadata (both variants have it)
 *   GET    /v1/blobs/{id}                  download (raw bytes; variant A's JSON data decoded)
 *   POST   /v1/blobs                       upload a file as a raw body, X-Blobstore-Policy and -Labels
 *   DELETE /v1/blobs/{id}                  after a confirmation
 *
 * Ids are shown and sent as hex (variant A's {id: base64} is converted). A 401 shows the sign-in
 * prompt; a 403 says which scope the token lacks.
 * A chunk of the page's one script (ui-page.ts): no backticks or dollar-brace.
 */
export const UI_BLOBS: string = String.raw`
  var POLICIES = [['REPLICATION_POLICY_NONE', 'NONE: one copy'], ['REPLICATION_POLICY_REPLICA2', 'REPLICA2: two copies'],
    ['REPLICATION_POLICY_REPLICA3', 'REPLICA3: three copies (default)'], ['REPLICATION_POLICY_EC42', 'EC42: erasure coding 4+2'],
    ['REPLICATION_POLICY_EC82', 'EC82: erasure coding 8+2']];
  var POLICY_NAMES = ['UNSPECIFIED', 'NONE', 'REPLICA2', 'REPLICA3', 'EC42', 'EC82'];
  var UPLOAD_MAX_BYTES = 1e9;
  var pages = [''], pageIndex = 0, selected = null, blobsStarted = false;

  function hexOf(id) {
    if (typeof id === 'string') return id;
    var bin = atob(id && id.id || ''), out = '';
    for (var i = 0; i < bin.length; i++) out += ('0' + bin.charCodeAt(i).toString(16)).slice(-2);
    return out;
  }
  function policyName(p) {
    var name = typeof p === 'number' ? POLICY_NAMES[p] : String(p || '').replace(/^REPLICATION_POLICY_/, '');
    return name || String(p);
  }
  function say(message, kind) { text('blob-status', message); $('blob-status').className = kind || ''; }

  // Any API call: the token goes along; 401 asks for one, other failures say the node's message.
  async function api(method, path, body, headers) {
    var res = await fetch(path, { method: method, body: body, headers: authHeaders(headers || {}), cache: 'no-store' });
    if (res.ok) { askToken(false); return res; }
    var message = res.status + ' ' + res.statusText;
    try { var j = await res.json(); if (j && j.message) message = res.status + ': ' + j.message; } catch (e) { /* no JSON body */ }
    if (res.status === 401) { askToken(true); message = 'This node needs a bearer token (401): enter one above.'; }
    // A token without the scope: the form stays open to use another one.
    if (res.status === 403) { askToken(true); message = 'The token may not do this (' + message + '): use another one above.'; }
    var err = new Error(message); err.status = res.status; throw err;
  }

  async function listBlobs() {
    var prefix = $('blob-prefix').value.trim(), limit = Math.max(1, Math.min(1000, num($('blob-limit').value) || 50));
    var q = '?limit=' + limit + (prefix ? '&prefix=' + encodeURIComponent(prefix) : '') + (pages[pageIndex] ? '&cursor=' + encodeURIComponent(pages[pageIndex]) : '');
    var page;
    try { page = await (await api('GET', '/v1/blobs' + q)).json(); } catch (err) { say(err.message, 'bad'); return; }
    var ids = (page.ids || []).map(hexOf);
    pages.length = pageIndex + 1;
    if (page.has_more && page.next_cursor) pages.push(page.next_cursor);
    var rows = ids.map(function (id) {
      var tr = el('tr'), td = el('td'), b = el('button', 'link', id);
      b.type = 'button';
      b.addEventListener('click', function () { showBlob(id); });
      td.appendChild(b); tr.appendChild(td);
      if (id === selected) tr.className = 'selected';
      return tr;
    });
    $('blob-rows').replaceChildren.apply($('blob-rows'), rows.length ? rows : [(function () { var tr = el('tr'); tr.appendChild(el('td', 'empty', prefix ? 'no blob id starts with ' + prefix : 'no blobs')); return tr; })()]);
    text('blob-page', 'page ' + (pageIndex + 1) + ' \u00b7 ' + count(ids.length, 'blob') + (page.has_more ? ' \u00b7 more' : ''));
    $('blob-prev').disabled = pageIndex === 0;
    $('blob-next').disabled = !page.has_more;
  }

  async function showBlob(id) {
    selected = id;
    var meta;
    try { meta = await (await api('GET', '/v1/blobs/' + id + '/stat')).json(); } catch (err) { say(err.message, 'bad'); return; }
    if (!meta.exists) { say('blob ' + id + ' no longer exists', 'bad'); $('blob-detail').hidden = true; return listBlobs(); }
    var m = meta.meta || {}, labels = m.labels || {}, keys = Object.keys(labels).sort();
    var created = new Date(Number(m.created_at) / 1e6);
    var checksum = hexOf({ id: m.checksum });
    var dl = $('blob-meta');
    var items = [['id', id], ['size', fmtBytes(num(m.size)) + ' (' + fmtInt(num(m.size)) + ' bytes)'], ['created', isNaN(created.getTime()) ? '\u2013' : created.toISOString()],
      ['policy', policyName(m.policy)], ['checksum', checksum], ['labels', keys.length ? keys.map(function (k) { return k + '=' + labels[k]; }).join(', ') : 'none']];
    dl.replaceChildren();
    items.forEach(function (kv) { var dt = el('dt', '', kv[0]), dd = el('dd', '', kv[1]); dd.id = 'blob-meta-' + kv[0]; dl.append(dt, dd); });
    $('blob-detail').hidden = false;
    Array.prototype.forEach.call(document.querySelectorAll('#blob-rows tr'), function (tr) { tr.className = tr.textContent === id ? 'selected' : ''; });
  }

  async function download() {
    var id = selected, res;
    try { res = await api('GET', '/v1/blobs/' + id); } catch (err) { say(err.message, 'bad'); return; }
    var blob;
    if ((res.headers.get('content-type') || '').indexOf('application/json') === 0) {
      var bin = atob((await res.json()).data || ''), bytes = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      blob = new Blob([bytes], { type: 'application/octet-stream' });
    } else {
      blob = await res.blob();
    }
    var a = el('a'), url = URL.createObjectURL(blob);
    a.href = url; a.download = id; document.body.appendChild(a); a.click(); a.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 10000);
    say('downloaded ' + id + ' (' + fmtBytes(blob.size) + ')', 'ok');
  }

  async function remove() {
    var id = selected;
    if (!confirm('Delete blob ' + id + ' from this node?')) return;
    try { await api('DELETE', '/v1/blobs/' + id); } catch (err) { say(err.message, 'bad'); return; }
    selected = null;
    $('blob-detail').hidden = true;
    say('deleted ' + id, 'ok');
    await listBlobs();
  }

  // key=value per line (a value may hold commas); an empty line is skipped.
  function parseLabels(textValue) {
    var labels = {};
    textValue.split('\n').forEach(function (line) {
      var t = line.trim(), at = t.indexOf('=');
      if (!t) return;
      if (at <= 0) throw new Error('label "' + t + '": write key=value');
      labels[t.slice(0, at).trim()] = t.slice(at + 1).trim();
    });
    return labels;
  }

  async function upload(ev) {
    ev.preventDefault();
    var file = $('upload-file').files[0], labels;
    if (!file) { say('choose a file first', 'bad'); return; }
    // A browser sends a file with its Content-Length, and the front end takes a body of 10^9
    // bytes or more only chunked (docs/api.md): such a file goes by the command line.
    if (file.size >= UPLOAD_MAX_BYTES) { say(file.name + ' is ' + fmtBytes(file.size) + ': files of 10^9 bytes or more are stored with the command line (blobstore put), not from the browser', 'bad'); return; }
    try { labels = parseLabels($('upload-labels').value); } catch (err) { say(err.message, 'bad'); return; }
    var headers = { 'Content-Type': 'application/octet-stream', 'X-Blobstore-Policy': $('upload-policy').value };
    if (Object.keys(labels).length) headers['X-Blobstore-Labels'] = JSON.stringify(labels);
    say('uploading ' + file.name + ' (' + fmtBytes(file.size) + ')\u2026', '');
    var res;
    try { res = await api('POST', '/v1/blobs', file, headers); } catch (err) { say(err.message, 'bad'); return; }
    var stored = await res.json(), id = hexOf(stored.id);
    // Variant B answers 201 for new bytes and 200 for bytes already stored; variant A (ids as
    // objects) answers 200 either way, so it cannot tell.
    var again = typeof stored.id === 'string' && res.status === 200;
    say((again ? 'already stored: ' : 'stored ') + file.name + ' as ' + id, 'ok');
    $('upload-file').value = '';
    await listBlobs();
    await showBlob(id);
  }

  function startBlobs() {
    if (blobsStarted) return;
    blobsStarted = true;
    if (!CONFIG.apiHere) {
      $('blobs').hidden = true;
      $('blobs-away').hidden = false;
      $('blobs-away-link').replaceChildren(CONFIG.apiPort ? link(urlOn(CONFIG.apiPort, '/ui/#blobs'), urlOn(CONFIG.apiPort, '/ui/')) : el('span', '', 'no API address known'));
      return;
    }
    POLICIES.forEach(function (p) { var o = el('option', '', p[1]); o.value = p[0]; $('upload-policy').appendChild(o); });
    $('upload-policy').value = 'REPLICATION_POLICY_REPLICA3';
    $('blob-search').addEventListener('submit', function (ev) { ev.preventDefault(); pages = ['']; pageIndex = 0; say('', ''); listBlobs(); });
    $('blob-prev').addEventListener('click', function () { if (pageIndex > 0) { pageIndex--; listBlobs(); } });
    $('blob-next').addEventListener('click', function () { if (pageIndex + 1 < pages.length) { pageIndex++; listBlobs(); } });
    $('blob-download').addEventListener('click', download);
    $('blob-delete').addEventListener('click', remove);
    $('upload').addEventListener('submit', upload);
    listBlobs();
  }
`;
