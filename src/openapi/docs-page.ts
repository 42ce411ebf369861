/**
 * A readable page of an OpenAPI document, as FastAPI serves one at /docs: rendered on the server
 * into one self-contained HTML document (no script, no external request; its CSP forbids both),
 * with each operation's parameters, request body and responses, and the schemas as JSON.
 */

const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

type Doc = {
  info: { title: string; version: string; description?: string };
  paths: Record<string, Record<string, Record<string, unknown>>>;
  components?: { schemas?: Record<string, unknown> };
};

const METHODS = ['get', 'head', 'post', 'put', 'delete', 'patch'];

function schemaName(schema: unknown): string {
  if (schema && typeof schema === 'object') {
    const s = schema as Record<string, unknown>;
    if (typeof s.$ref === 'string') return s.$ref.replace('#/components/schemas/', '');
    if (s.type === 'array') return `array of ${schemaName(s.items)}`;
    if (typeof s.type === 'string') return s.format ? `${s.type} (${s.format})` : s.type;
    if (Array.isArray(s.oneOf) || Array.isArray(s.anyOf)) return ((s.oneOf ?? s.anyOf) as unknown[]).map(schemaName).join(' | ');
  }
  return 'any';
}

function content(c: unknown): string {
  if (!c || typeof c !== 'object') return '';
  return Object.entries(c as Record<string, { schema?: unknown }>).map(([type, m]) => `<code>${escape(type)}</code>: ${escape(schemaName(m.schema))}`).join('; ');
}

function operation(path: string, method: string, op: Record<string, unknown>): string {
  const params = (op.parameters as Record<string, unknown>[] | undefined) ?? [];
  const rows = params.map((p) => `<tr><td><code>${escape(String(p.name))}</code></td><td>${escape(String(p.in))}</td><td>${p.required ? 'yes' : 'no'}</td><td>${escape(schemaName(p.schema))}</td><td>${escape(String(p.description ?? ''))}</td></tr>`).join('');
  const body = op.requestBody as { content?: unknown } | undefined;
  const responses = Object.entries((op.responses as Record<string, Record<string, unknown>>) ?? {})
    .map(([status, r]) => `<li><b>${escape(status)}</b> ${escape(String(r.description ?? ''))}${r.content ? ` (${content(r.content)})` : ''}</li>`).join('');
  return `<section class="op" id="${escape(`${method}-${path}`)}">
<h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${escape(path)}</code> ${escape(String(op.summary ?? ''))}</h3>
${op.description ? `<p>${escape(String(op.description))}</p>` : ''}
${rows ? `<table><thead><tr><th>parameter</th><th>in</th><th>required</th><th>type</th><th></th></tr></thead><tbody>${rows}</tbody></table>` : ''}
${body ? `<p>Request body: ${content(body.content)}</p>` : ''}
<ul>${responses}</ul>
</section>`;
}

/** A schema as indented JSON, a bigint bound (an int64's maximum) written exactly. */
function schemaText(schema: unknown): string {
  const BIG = '\u0000bigint:';
  const text = JSON.stringify(schema, (_key, value: unknown) => (typeof value === 'bigint' ? BIG + value.toString() : value), 2);
  return text.replace(/"\\u0000bigint:(-?\d+)"/g, '$1');
}

export function docsPage(doc: object): string {
  const d = doc as Doc;
  const ops = Object.entries(d.paths).flatMap(([path, item]) => METHODS.filter((m) => item[m]).map((m) => operation(path, m, item[m]!)));
  const schemas = Object.entries(d.components?.schemas ?? {})
    .map(([name, schema]) => `<h3 id="schema-${escape(name)}">${escape(name)}</h3><pre>${escape(schemaText(schema))}</pre>`).join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'">
<meta name="color-scheme" content="light dark"><link rel="icon" href="data:,">
<title>${escape(d.info.title)} - docs</title>
<style>
body { font:14px/1.5 system-ui, sans-serif; margin:0 auto; max-width:70rem; padding:1rem 1.5rem; }
.op { border:1px solid #8884; border-radius:.5rem; padding:.2rem 1rem; margin:.7rem 0; }
.m { display:inline-block; min-width:4.5rem; text-align:center; border-radius:.3rem; color:#fff; font-size:.8rem; padding:.1rem .4rem; background:#666; }
.get, .head { background:#2f6fd0; } .post { background:#188a4c; } .put { background:#b27b00; } .delete { background:#cc3b3b; }
table { border-collapse:collapse; } td, th { border-bottom:1px solid #8884; padding:.15rem .6rem; text-align:left; }
pre { background:#8881; padding:.6rem; overflow:auto; }
</style></head><body>
<h1>${escape(d.info.title)} <small>${escape(d.info.version)}</small></h1>
${d.info.description ? `<p>${escape(d.info.description)}</p>` : ''}
<p>The machine-readable document: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1).</p>
<h2>Operations</h2>
${ops.join('\n')}
<h2>Schemas</h2>
${schemas}
</body></html>
`;
}
