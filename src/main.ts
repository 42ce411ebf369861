#!/usr/bin/env node
/**
 * The `blobstore` command: the node's, the client's (src/cli) and the apps' (src/apps)
 * subcommands, each in its own module, registered here, above them all. Usage errors exit with
 * status 2, failures with 1.
 */
import { Command, CommanderError } from 'commander';
import { BLOB_COMMANDS, registerBlobCommands } from './cli/blob-commands.js';
import { endQuietlyWhenOutputCloses, printError } from './cli/output.js';
import { packageVersion } from './version.js';

function newProgram(): Command {
  return new Command('blobstore')
    .description('blobstore: a distributed, content-addressed blob store')
    .version(`blobstore ${packageVersion()} (Node.js ${process.version})`, '-V, --version', 'print the version and exit')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
}

/** Every command. The node's modules (the server, the logger, the stacks) load with it. */
export async function buildProgram(): Promise<Command> {
  const [{ registerServe }, { registerOrders }, { registerConfig }, { registerDeploy }, { registerStatus }, { registerDown }, { registerAuth }, { registerHealthcheck }] = await Promise.all([
    import('./cli/serve.js'), import('./apps/orders/cli.js'), import('./cli/config.js'), import('./apps/stack/deploy.js'),
    import('./apps/stack/status.js'), import('./apps/stack/down.js'), import('./cli/auth.js'), import('./cli/healthcheck.js'),
  ]);
  const program = newProgram();
  registerServe(program);
  registerOrders(program);
  registerConfig(program);
  registerDeploy(program);
  registerStatus(program);
  registerDown(program);
  registerAuth(program);
  registerBlobCommands(program);
  registerHealthcheck(program);
  return program;
}

/**
 * The program `argv` needs: a client command (put, get, stat, ls, rm) loads only its own module,
 * since a script may run it thousands of times and the node's modules were half of its start.
 */
async function programFor(argv: string[]): Promise<Command> {
  const first = argv[2];
  if (first === undefined || !BLOB_COMMANDS.includes(first)) return buildProgram();
  const program = newProgram();
  registerBlobCommands(program);
  return program;
}

async function main(argv: string[]): Promise<void> {
  if (argv[2] !== 'serve' && argv[2] !== 'orders') endQuietlyWhenOutputCloses();
  const program = await programFor(argv);
  // Nothing left to run while the command has not finished: a call that will never settle. Node
  // would exit 0 here, as if the command had done its work.
  const stalled = (): void => {
    printError('the command stopped before it finished (a call that never settled): this is a bug');
    process.exit(1);
  };
  process.once('beforeExit', stalled);
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      const ok = err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help';
      process.exit(ok ? 0 : 2);
    }
    throw err;
  } finally {
    process.off('beforeExit', stalled);
  }
}

main(process.argv).catch((err: unknown) => {
  printError(`${err instanceof Error ? err.message : String(err)}`);
  process.exit(typeof (err as { exitCode?: unknown })?.exitCode === 'number' ? (err as { exitCode: number }).exitCode : 1);
});
