import { type Command, Option } from 'commander';
import { REGIONS, type Region } from './settings.js';
import { readState } from './deploy-state.js';
import { failure } from '../../cli/errors.js';
import { probe } from './health.js';
import { print } from '../../cli/output.js';
import { isOurProcess } from './processes.js';
import { parseRegion, parseStackName } from './stack-cli.js';
import { SERVICE_HEADER, formatTable, serviceCells } from './table.js';

/** One deployed service as `status` reports it. */
export interface ServiceStatus {
  readonly region: Region;
  readonly service: string;
  readonly kind: 'node' | 'orders';
  readonly address: string;
  /** A node's metrics listener (metrics, /health, the web UI at /) and gRPC listener, host:port. */
  readonly metrics?: string;
  readonly ui?: string;
  readonly grpc?: string;
  readonly pid: number;
  readonly state: 'healthy' | 'unhealthy' | 'down';
}

/** `blobstore status <stack> [--region r] [--output table|json]`: every deployed service and its state. */
export function registerStatus(program: Command): void {
  program
    .command('status')
    .description('show the services of a deployed stack: address, pid, and state (healthy, unhealthy, down)')
    .argument('<stack>', 'stack name')
    .addOption(new Option('--region <region>', 'only this region (default: every region deployed)').choices(REGIONS))
    .addOption(new Option('-o, --output <format>', 'table for people, json for scripts').choices(['table', 'json']).default('table'))
    .addHelpText('after', `
JSON: {"stack", "healthy", "total", "services": [{"region", "service", "kind", "address",
"metrics", "ui", "grpc" (nodes), "pid", "state"}]}.
Exit status: 0 when every service is healthy, 1 otherwise (or when the stack is not deployed), 2 usage error.`)
    .action(async (stackName: string, opts: { region?: string; output: 'table' | 'json' }) => {
      const stack = parseStackName(stackName);
      const regions: Region[] = opts.region ? [parseRegion(opts.region)] : [...REGIONS];
      const states = regions.map((r) => readState(stack, r)).filter((s) => s !== undefined);
      if (states.length === 0) {
        throw failure(`stack ${stack} is not deployed${opts.region ? ` in ${opts.region}` : ''}`);
      }
      const services: ServiceStatus[] = [];
      for (const state of states) {
        const probed = await Promise.all(state.services.map(async (s): Promise<ServiceStatus['state']> => {
          if (!isOurProcess(s)) return 'down';
          return (await probe(s.healthUrl)) ? 'healthy' : 'unhealthy';
        }));
        state.services.forEach((s, i) => {
          services.push({
            region: state.region, service: s.name, kind: s.kind, address: s.addr,
            ...(s.metricsAddr ? { metrics: s.metricsAddr, ui: `http://${s.metricsAddr}/` } : {}),
            ...(s.grpcAddr ? { grpc: s.grpcAddr } : {}),
            pid: s.pid, state: probed[i]!,
          });
        });
      }
      const healthy = services.filter((s) => s.state === 'healthy').length;
      if (opts.output === 'json') {
        print(JSON.stringify({ stack, healthy, total: services.length, services }, null, 2));
      } else {
        const rows = services.map((s) => [s.region, ...serviceCells({ name: s.service, addr: s.address, metricsAddr: s.metrics, grpcAddr: s.grpc }), String(s.pid), s.state]);
        print(formatTable(['REGION', ...SERVICE_HEADER, 'PID', 'STATE'], rows));
        print(`stack ${stack}: ${healthy}/${services.length} services healthy`);
      }
      if (healthy !== services.length) process.exitCode = 1;
    });
}
