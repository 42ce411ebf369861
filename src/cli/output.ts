/**
 * What a command prints for the person or script that ran it: results on stdout, notes and errors
 * on stderr as `blobstore: <text>`. This is a command's output, not a log: the long-running
 * services (`serve`, `orders serve`) log through src/log once they have started.
 */

export function print(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

export function printError(text: string): void {
  process.stderr.write(`blobstore: ${text}\n`);
}
