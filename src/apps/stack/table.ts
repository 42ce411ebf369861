/** A plain text table: columns padded to their widest cell, two spaces apart. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  return [line(header), ...rows.map(line)].join('\n');
}

/** The columns that say where a deployed service listens (the plan, deploy's table, status). */
export const SERVICE_HEADER = ['SERVICE', 'ADDRESS', 'METRICS + UI', 'GRPC'] as const;

export function serviceCells(s: { readonly name: string; readonly addr: string; readonly metricsAddr?: string; readonly grpcAddr?: string }): string[] {
  return [s.name, s.addr, s.metricsAddr ? `http://${s.metricsAddr}/` : '-', s.grpcAddr ?? '-'];
}
