import { type Command, Option } from 'commander';
import { REGIONS, type Region } from '../config/stacks.js';
import { readState } from './deploy-state.js';
import { failure } from './errors.js';
import { probe } from './health.js';
import { isOurProcess } from './processes.js';
import { parseRegion, parseStackName } from './stack-cli.js';
import { formatTable } from './table.js';
import { print } from './output.js';

/** `blobstore status <stack> [--region r]`: every deployed service, its pid and whether it is healthy. */
export function registerStatus(program: Command): void {
  program
    .command('status')
    .description('show the services of a deployed stack: address, pid, and state (healthy, unhealthy, down)')
    .argument('<stack>', 'stack name')
    .addOption(new Option('--region <region>', `only this region: ${REGIONS.join(', ')} (default: every region deployed)`).choices(REGIONS))
    .addHelpText('after', '\nExit status: 0 when every service is healthy, 1 otherwise (or when the stack is not deployed), 2 usage error.')
    .action(async (stackName: string, opts: { region?: string }) => {
      const stack = parseStackName(stackName);
      const regions: Region[] = opts.region ? [parseRegion(opts.region)] : [...REGIONS];
      const states = regions.map((r) => readState(stack, r)).filter((s) => s !== undefined);
      if (states.length === 0) {
        throw failure(`stack ${stack} is not deployed${opts.region ? ` in ${opts.region}` : ''}`);
      }
      const rows: string[][] = [];
      let healthyCount = 0;
      let total = 0;
      for (const state of states) {
        const states = await Promise.all(state.services.map(async (s) => {
          if (!isOurProcess(s)) return 'down';
          return (await probe(s.healthUrl)) ? 'healthy' : 'unhealthy';
        }));
        state.services.forEach((s, i) => {
          rows.push([state.region, s.name, s.addr, String(s.pid), states[i]!]);
          total++;
          if (states[i] === 'healthy') healthyCount++;
        });
      }
      print(formatTable(['REGION', 'SERVICE', 'ADDRESS', 'PID', 'STATE'], rows));
      print(`stack ${stack}: ${healthyCount}/${total} services healthy`);
      if (healthyCount !== total) process.exitCode = 1;
    });
}
