/** What `blobstore --version` and the commands' --help say. */
import { readFileSync, rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { ORDERS_SETTINGS } from '../../src/apps/orders/settings.js';
import { tuningDoc } from '../../src/cli/setting-options.js';
import { SETTINGS, type SettingSpec, envName, flagName } from '../../src/config/settings.js';
import { ROOT, type Sandbox, run, sandbox } from './helpers.js';

const box: Sandbox = sandbox();
afterAll(() => rmSync(box.home, { recursive: true, force: true }));

describe('--version', () => {
  it.each([['--version'], ['-V']])('%s prints the package version and exits 0', (flag) => {
    const { version } = JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')) as { version: string };
    const r = run(box, [flag]);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`blobstore ${version} (Node.js ${process.version})\n`);
  });
});

/** The help text with commander's line wrapping undone. */
const unwrapped = (text: string): string => text.replace(/\n\s+/g, ' ');

describe.each([
  { command: ['serve'], table: SETTINGS as Record<string, SettingSpec> },
  { command: ['orders', 'serve'], table: ORDERS_SETTINGS as Record<string, SettingSpec> },
])('$command --help', ({ command, table }) => {
  const help = run(box, [...command, '--help']);
  const text = unwrapped(help.stdout);

  it('exits 0', () => {
    expect(help.status).toBe(0);
  });

  it('shows every setting but the tuning knobs once, with its default and its environment variable', () => {
    for (const [key, spec] of Object.entries(table)) {
      if (spec.tuning) {
        expect(help.stdout, key).not.toContain(`--${flagName(key)} <value>`);
        continue;
      }
      expect(help.stdout.split(`--${flagName(key)} <value>`).length - 1, key).toBe(1);
      expect(text, key).toMatch(new RegExp(`--${flagName(key)} <value> .*\\(default [^;]+; env ${envName(key)}\\)`));
    }
    if (table === SETTINGS) {
      expect(text).toContain('(default 127.0.0.1:8080; env BLOBSTORE_LISTEN)');
      expect(text).toContain('(default 5GiB; env BLOBSTORE_MAX_BLOB_BYTES)');
      expect(text).toContain('(default 30s; env BLOBSTORE_BODY_IDLE_TIMEOUT_MS)');
    }
  });

  it("lists the spec's names once, in a table after the options, not as a second flag per setting", () => {
    for (const spec of Object.values(table)) {
      if (!spec.specName) continue;
      expect(help.stdout, spec.specName).not.toContain(`--${spec.specName} <value>`);
      expect(help.stdout.match(new RegExp(`^  ${spec.specName} +=`, 'gm')), spec.specName).toHaveLength(1);
    }
  });

  it("names each value of an enum setting once, in the setting's own words", () => {
    for (const [key, spec] of Object.entries(table)) {
      if (!spec.choices || spec.tuning) continue;
      const line = new RegExp(`--${flagName(key)} <value> (.*?)\\(default`).exec(text)![1]!;
      for (const choice of spec.choices) expect(line, `${key}: ${choice}`).toMatch(new RegExp(`\\b${choice}\\b`));
      expect(text).not.toContain('choices:');
    }
  });
});

describe('the tuning knobs', () => {
  const tuning = Object.entries(SETTINGS as Record<string, SettingSpec>).filter(([, spec]) => spec.tuning);

  it('are named in serve --help, and docs/tuning.md is the table as the settings are now (node dist/bench/tuning-doc.js writes it)', () => {
    expect(tuning.length).toBeGreaterThan(0);
    expect(unwrapped(run(box, ['serve', '--help']).stdout)).toContain(`${tuning.length} tuning settings`);
    expect(readFileSync(new URL('../../docs/tuning.md', import.meta.url), 'utf8')).toBe(tuningDoc());
    for (const [key] of tuning) expect(tuningDoc(), key).toContain(`| \`--${flagName(key)}\``);
  });

  it('still take their flag', () => {
    const r = run(box, ['serve', '--segment-size-bytes', 'lots', '--listen', '127.0.0.1:0']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/segmentSizeBytes/);
  });
});

describe('the spec names still work as flags', () => {
  it('--NodeID sets the node ID (rejected values name the setting)', () => {
    const r = run(box, ['serve', '--NodeID', '', '--listen', '127.0.0.1:0']);
    expect(r.status).toBe(2);
    expect(r.stderr).toBe('blobstore: setting nodeId (NodeID) must not be empty\n');
  });
});

describe('choices are printed once', () => {
  it.each([['deploy'], ['status'], ['down']])('%s --help lists the regions once, as the choices of --region', (cmd) => {
    const text = unwrapped(run(box, [cmd, '--help']).stdout);
    expect(text.split('"us-west-2"').length - 1).toBe(1);
    expect(/--region <region> ([^(]*)\(/.exec(text)![1]).not.toMatch(/us-/);
  });
});
