import type { Command } from 'commander';
import { TOKEN_CHARS } from '../auth/bearer.js';
import type { Scope } from '../auth/gate.js';
import { TokenFileError, sha256 } from '../auth/token-file.js';
import { readTokenFile } from '../auth/tokens.js';
import { usageError } from './errors.js';
import { print, printError } from './output.js';

/**
 * `blobstore auth hash-token`: reads a token on stdin and prints the token-file entry that holds
 * its SHA-256 instead of the token. `blobstore auth check <file>`: validates a token file the way
 * a node loads it (before sending SIGHUP, for example). Neither prints a token.
 */

const SCOPES: readonly Scope[] = ['read', 'write', 'admin'];

export function registerAuth(program: Command): void {
  const auth = program.command('auth').description('bearer token helpers (setting AuthTokensFile)');
  auth
    .command('hash-token')
    .description('read a token on stdin, print its token-file entry with the SHA-256 of the token')
    .option('--name <name>', 'the entry\'s name', 'token')
    .option('--scopes <list>', 'comma-separated scopes: read, write, admin (admin implies read and write)', 'read')
    .addHelpText('after', `
Example:
  TOKEN=$(head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
  printf '%s' "$TOKEN" | blobstore auth hash-token --name ci --scopes read,write
  # {"name":"ci","sha256":"...","scopes":["read","write"]}   add it to the "tokens" array`)
    .action(async (opts: { name: string; scopes: string }) => {
      if (opts.name.trim() === '') throw usageError('--name must not be empty');
      const scopes = parseScopeList(opts.scopes);
      const token = stripNewline(await readStdin());
      if (!TOKEN_CHARS.test(token)) {
        throw usageError('the token on stdin must be one line of visible ASCII characters without spaces (a trailing newline is ignored)');
      }
      print(JSON.stringify({ name: opts.name, sha256: sha256(token).toString('hex'), scopes }));
    });
  auth
    .command('check')
    .description('validate a token file as a node would load it')
    .argument('<file>', 'the token file')
    .action((file: string) => {
      try {
        const entries = readTokenFile(file);
        const plain = entries.filter((e) => e.plain).length;
        print(`${file}: ${entries.length} token(s) OK${plain > 0 ? ` (${plain} plain; sha256 entries are recommended)` : ''}`);
      } catch (err) {
        if (err instanceof TokenFileError) throw usageError(`${file}: ${err.message}`);
        throw err;
      }
    });
}

function parseScopeList(list: string): Scope[] {
  const scopes = list.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (scopes.length === 0) throw usageError('--scopes must name at least one of read, write, admin');
  for (const s of scopes) {
    if (!SCOPES.includes(s as Scope)) throw usageError(`unknown scope "${s}" (expected read, write, admin)`);
  }
  return [...new Set(scopes)] as Scope[];
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) printError('type the token, then Enter and Ctrl-D (it is echoed: prefer a pipe)');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** One trailing line break (from echo or a file) is not part of the token. */
const stripNewline = (text: string): string => text.replace(/\r?\n$/, '');
