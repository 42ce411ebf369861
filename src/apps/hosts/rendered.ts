/** What a target renders: files by path relative to the output dir. */
export interface RenderedFile {
  readonly path: string;
  readonly text: string;
  /** 0o755 for scripts, else 0o644 (env files hold paths, never secrets). */
  readonly mode: number;
}

export const file = (path: string, text: string, mode = 0o644): RenderedFile => ({ path, text: text.endsWith('\n') ? text : `${text}\n`, mode });

/** The header line every rendered file starts with, so a reader knows where it came from. */
export const renderedBy = (cluster: string, region: string, target: string, comment = '#'): string =>
  `${comment} Rendered by \`blobstore deploy ${cluster} --region ${region} --target ${target}\`; docs/install.md explains it.`;
