/** The web UI's style sheet (inline in the page: its CSP allows no external style). */
export const UI_STYLE: string = String.raw`:root { --bg:#f4f6f9; --card:#fff; --fg:#1b2130; --muted:#5d6778; --line:#e2e6ec; --track:#e9edf2;
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
#auth[hidden], #banner[hidden], [hidden] { display:none !important; }
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
nav.tabs { display:flex; gap:.3rem; }
nav.tabs button { background:transparent; color:var(--muted); border-color:transparent; }
nav.tabs button[aria-selected=true] { background:var(--bg); color:var(--fg); border-color:var(--line); font-weight:600; }
.away { margin:1rem 1.4rem; }
td.few, span.few { color:var(--muted); font-style:italic; }
.footnote { color:var(--muted); font-size:.75rem; margin:.4rem 0 0; }
#blobs { display:grid; grid-template-columns:minmax(0, 3fr) minmax(0, 2fr); gap:.8rem; padding:.8rem 1.4rem 1.2rem; }
@media (max-width: 900px) { #blobs { grid-template-columns:1fr; } }
#blobs > div > section + section { margin-top:.8rem; }
td.failed { color:var(--bad); font-weight:600; }
#blobs form { display:flex; flex-wrap:wrap; gap:.5rem; align-items:center; margin:0 0 .6rem; }
#blobs label { color:var(--muted); font-size:.8rem; }
#blob-list td:first-child { font-family:ui-monospace, monospace; }
#blob-list button.link, #blob-detail button.plain { background:transparent; color:var(--accent); border:0; padding:0; font-family:inherit; cursor:pointer; }
#blob-list tr.selected td { background:var(--okbg); }
.pager { display:flex; gap:.5rem; align-items:center; margin-top:.5rem; }
button.secondary { background:var(--card); color:var(--fg); border-color:var(--line); }
button.danger { background:var(--bad); border-color:var(--bad); }
button:disabled { opacity:.5; cursor:default; }
dl.meta { display:grid; grid-template-columns:auto minmax(0, 1fr); gap:.2rem .8rem; margin:.2rem 0 .6rem; }
dl.meta dt { color:var(--muted); } dl.meta dd { margin:0; overflow-wrap:anywhere; font-variant-numeric:tabular-nums; }
textarea { font:inherit; width:100%; min-height:3.2rem; border-radius:.4rem; border:1px solid var(--line); background:var(--card); color:var(--fg); padding:.3rem .5rem; }
#blob-status { min-height:1.3rem; margin:.4rem 0 0; }
#blob-status.bad { color:var(--bad); font-weight:600; } #blob-status.ok { color:var(--ok); }
`;
