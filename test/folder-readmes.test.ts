/**
 * Every folder under src/ says in its README what it may import ("May import: `src/x`, ..."),
 * and that sentence is true: each import of another folder's module (static, type-only or
 * dynamic) is one it names, and each it names is imported. The sentence ends at its first full
 * stop; what follows is prose.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from './helpers/node-process.js';

const SRC = join(REPO, 'src');
const IMPORT = /(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g;

function filesOf(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? filesOf(p) : /\.(ts|mjs)$/.test(p) ? [p] : [];
  });
}

/** The paths the README's "May import:" sentence names (folders or files, without a trailing slash). */
function allowedBy(readme: string): string[] | undefined {
  const at = readme.indexOf('May import:');
  if (at < 0) return undefined;
  const rest = readme.slice(at + 'May import:'.length);
  // Full stops inside backticks (file names) are not the sentence's end.
  const masked = rest.replace(/`[^`]*`/g, (m) => m.replace(/\./g, '_'));
  const end = /\.(\s|$)/.exec(masked)?.index ?? rest.length;
  return [...rest.slice(0, end).matchAll(/`(src\/[^`]+)`/g)].map((m) => m[1]!.replace(/\/$/, ''));
}

const folders = readdirSync(SRC).filter((f) => statSync(join(SRC, f)).isDirectory());

describe('folder READMEs name what the folder imports', () => {
  for (const folder of folders) {
    it(`src/${folder}`, () => {
      const readme = join(SRC, folder, 'README.md');
      expect(existsSync(readme), `src/${folder}/README.md`).toBe(true);
      const allowed = allowedBy(readFileSync(readme, 'utf8'));
      expect(allowed, `src/${folder}/README.md has no "May import:" sentence`).toBeDefined();
      const undeclared = new Set<string>();
      const used = new Set<string>();
      for (const file of filesOf(join(SRC, folder))) {
        for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) {
          const target = relative(REPO, resolve(dirname(file), m[1]!.replace(/\.js$/, '.ts')));
          if (target.startsWith(`src/${folder}/`) || !target.startsWith('src/')) continue;
          const by = allowed!.find((a) => target === a || target.startsWith(`${a}/`));
          if (by) used.add(by);
          else undeclared.add(`${relative(REPO, file)} -> ${target}`);
        }
      }
      expect([...undeclared].sort(), 'imports the README does not name').toStrictEqual([]);
      expect(allowed!.filter((a) => !used.has(a)), 'named in the README, imported by nothing here').toStrictEqual([]);
    });
  }
});
