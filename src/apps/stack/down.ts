import { rmSync } from 'node:fs';
import { type Command, Option } from 'commander';
import { REGIONS } from './settings.js';
import { withFileLock } from '../../cli/atomic-file.js';
import { readState } from './deploy-state.js';
import { stopService } from './processes.js';
import { regionDir, stateFile } from './stack.js';
import { parseRegion, parseStackName } from './stack-cli.js';
import { formatTable } from './table.js';
import { print } from '../../cli/output.js';

/**
 * `blobstore down <stack> --region r [--purge]`: stops every process of a deployed stack (SIGTERM,
 * SIGKILL after 15 s) and forgets its state. Data and logs stay unless --purge.
 */
export function registerDown(program: Command): void {
  program
    .command('down')
    .description('stop every process of a deployed stack in one region')
    .argument('<stack>', 'stack name')
    .addOption(new Option('--region <region>', 'region (required)').choices(REGIONS))
    .option('--purge', 'also delete the data dirs and logs of the stack in that region')
    .action(async (stackName: string, opts: { region?: string; purge?: boolean }) => {
      const stack = parseStackName(stackName);
      const region = parseRegion(opts.region);
      const dir = regionDir(stack, region);
      const state = readState(stack, region);
      if (!state) {
        print(`stack ${stack} is not deployed in ${region}; nothing to stop`);
        if (opts.purge) rmSync(dir, { recursive: true, force: true });
        return;
      }
      const results = await withFileLock(stateFile(stack, region), async () => {
        const outcome = await Promise.all(state.services.map((s) => stopService(s)));
        rmSync(stateFile(stack, region), { force: true });
        return outcome;
      });
      const words = { stopped: 'stopped', killed: 'killed (did not stop in time)', gone: 'was not running' };
      print(formatTable(['SERVICE', 'ADDRESS', 'PID', 'STATE'], state.services.map((s, i) => [s.name, s.addr, String(s.pid), words[results[i]!]])));
      if (opts.purge) rmSync(dir, { recursive: true, force: true });
      print(`stack ${stack} (${region}) is down${opts.purge ? `; removed ${dir}` : `; data and logs kept in ${dir}`}`);
    });
}
