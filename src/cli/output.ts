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

/**
 * A command whose standard output is closed early (`blobstore ls | head -1`) ends quietly with
 * status 141, as a process that SIGPIPE ends (what cat does): no stack, nothing more sent or
 * stored. Not for the services, whose standard output is their log.
 */
export function endQuietlyWhenOutputCloses(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(141);
    printError(`standard output: ${err.message}`);
    process.exit(1);
  });
}
