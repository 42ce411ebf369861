#!/usr/bin/env node
/**
 * The `blobstore` command. Each subcommand lives in its own module and registers itself here.
 * Usage errors exit with status 2, failures with 1.
 */
import { Command, CommanderError } from 'commander';
import { registerServe } from './serve.js';
import { registerOrders } from '../apps/orders/cli.js';
import { registerConfig } from './config.js';
import { registerDeploy } from '../apps/stack/deploy.js';
import { registerStatus } from '../apps/stack/status.js';
import { registerDown } from '../apps/stack/down.js';
import { registerAuth } from './auth.js';
import { registerBlobCommands } from './blob-commands.js';
import { registerHealthcheck } from './healthcheck.js';
import { printError } from './output.js';
import { packageVersion } from '../version.js';

export function buildProgram(): Command {
  const program = new Command('blobstore')
    .description('blobstore: a distributed, content-addressed blob store')
    .version(`blobstore ${packageVersion()} (Node.js ${process.version})`, '-V, --version', 'print the version and exit')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
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

async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
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
