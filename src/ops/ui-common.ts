/**
 * Helpers both views of the web UI use: DOM and number formatting, the bearer token (kept in
 * sessionStorage only), JSON requests with it, and links to the node's other listener. A chunk of
 * the page's one script (ui-page.ts): no backticks or dollar-brace, so it lives in a template.
 */
export const UI_COMMON: string = String.raw`  function $(id) { return document.getElementById(id); }
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

  // The bearer token lives in sessionStorage only: gone when the tab closes, never in a cookie.
  function token() { try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch (e) { return ''; } }
  function setToken(t) { try { sessionStorage.setItem(TOKEN_KEY, t); } catch (e) { /* storage off: nothing to keep */ } }
  function authHeaders(extra) {
    var headers = extra || {}, t = token();
    if (t) headers.Authorization = 'Bearer ' + t;
    return headers;
  }
  async function request(path) {
    var headers = authHeaders({ Accept: 'application/json' });
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
  // Another listener of this node: same host as the page, its own port.
  function urlOn(port, path) { return location.protocol + '//' + location.hostname + ':' + port + path; }
  function link(href, label) { var a = el('a', '', label); a.href = href; return a; }
  // The sign-in prompt, shared by both views: shown on a 401, hidden once a request passes.
  function askToken(show) { $('auth').hidden = !show; }
`;
