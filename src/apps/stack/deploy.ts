import { type Command, Option } from 'commander';
import { REGIONS, type Region } from './settings.js';
import { withFileLock } from '../../cli/atomic-file.js';
import { type ServiceState, readState, writeState } from './deploy-state.js';
import { failure, usageError } from '../../cli/errors.js';
import { waitHealthy } from './health.js';
import { checkOrdersApi, ordersBaseUrlFromEnv } from './orders-check.js';
import { type Step, planDeploy } from './plan.js';
import { isOurProcess, portFree, startService, stopService, waitReaped } from './processes.js';
import { type ServiceSpec, LOOPBACK, regionDir, serviceEnv, stateFile } from './stack.js';
import { loadStack, parseRegion, progressPrinter, logTail } from './stack-cli.js';
import { SERVICE_HEADER, formatTable, serviceCells } from './table.js';
import { print } from '../../cli/output.js';
import { TARGETS, type Target, deployTarget } from '../hosts/render.js';

/**
 * `blobstore deploy <stack> --region <r> [--dry-run]`: brings the stack up on this machine, one
 * process per service, and waits until every /healthz answers 200. Idempotent: services whose
 * configuration did not change keep running, changed ones restart, removed ones stop. With
 * `--target systemd|container|kubernetes` it renders an installation instead (src/apps/hosts).
 */

const HELP = `
Stacks: "dev" is built in (3 nodes + the orders service). Define others in the config file:
  blobstore config set stacks.prod.nodes --value 5
  blobstore config set stacks.prod.basePort --value 7300
Keys of stacks.<name>: nodes, basePort, policy, orders (true/false), ordersPort, ordersApiKeysFile.
Ports: block = basePort + 100 * region index (us-east-1 0, us-west-2 1, eu-central-1 2);
node i: HTTP API on block + i, metrics + web UI on block + 32 + i, gRPC on block + 64 + i;
the orders service on ordersPort or block + 99. All on 127.0.0.1; the plan shows each.
Data, logs and state: $XDG_STATE_HOME/blobstore/<stack>/<region>/ (default ~/.local/state/...).
After deploy, the orders API is checked through ORDERS_API_BASE_URL (default: the deployed
service; https required except for loopback http) with ORDERS_API_KEY as bearer credential.
With --target systemd|container|kubernetes, deploy starts nothing: it renders the installation of
the --cluster description's nodes in --region (units and env files, container run scripts, or
Kubernetes manifests) into --out, or prints them with --dry-run (docs/install.md).
Exit status: 0 healthy (or rendered), 1 failure, 2 usage error (a bad description among them).`;

interface DeployOptions {
  region?: string;
  dryRun?: boolean;
  timeout: string;
  target: Target;
  cluster?: string;
  out?: string;
}

export function registerDeploy(program: Command): void {
  program
    .command('deploy')
    .description('bring a stack (blob nodes + orders service) up on this machine and wait until it is healthy')
    .argument('<stack>', 'stack name: dev (built in) or one defined under stacks.<name> in the config file')
    .addOption(new Option('--region <region>', 'region to deploy to (required)').choices(REGIONS))
    .option('--dry-run', 'print the plan (what would start, stop or change) and touch nothing')
    .option('--timeout <seconds>', 'how long to wait for every service to become healthy', '30')
    .addOption(new Option('--target <target>', 'local runs the stack on this machine; systemd, container and kubernetes render an installation of the --cluster description instead').choices(TARGETS).default('local'))
    .option('--cluster <file>', 'with --target: the cluster description (JSON) whose name is <stack>, e.g. deploy/cluster.example.json')
    .option('--out <dir>', 'with --target: the directory the rendered files are written to')
    .addHelpText('after', HELP)
    .action(async (stackName: string, opts: DeployOptions) => {
      const region = parseRegion(opts.region);
      if (opts.target !== 'local') return deployTarget(stackName, region, opts.target, opts);
      if (opts.cluster !== undefined || opts.out !== undefined) throw usageError('--cluster and --out go with --target systemd, container or kubernetes');
      const timeoutMs = Number(opts.timeout) * 1000;
      if (!(timeoutMs > 0)) throw usageError(`--timeout must be a positive number of seconds, got "${opts.timeout}"`);
      const baseUrl = ordersBaseUrlFromEnv(process.env);
      const { stack, file } = loadStack(stackName);
      const { services, steps } = planDeploy(stack, region, { file, env: process.env }, readState(stack.name, region));
      if (opts.dryRun) return printPlan(stack.name, region, steps);
      await withFileLock(stateFile(stack.name, region), () => applyPlan(stack.name, region, services, steps, timeoutMs));
      const ordersService = services.find((s) => s.kind === 'orders');
      const base = baseUrl ?? (ordersService ? new URL(`http://${ordersService.addr}`) : undefined);
      if (base) {
        await checkOrdersApi(base, process.env.ORDERS_API_KEY || undefined);
        print(`orders API check passed (${base.origin})`);
      }
    });
}

function printPlan(stack: string, region: Region, steps: readonly Step[]): void {
  print(`deploy ${stack} to ${region}: dry run, nothing is started, stopped or written`);
  const rows = steps.map((s) => [
    ...serviceCells(s.spec ?? s.current!), s.current ? String(s.current.pid) : '-', `${s.action}${s.reason ? ` (${s.reason})` : ''}`,
  ]);
  print(formatTable([...SERVICE_HEADER, 'PID', 'PLAN'], rows));
  print(`data, logs and state: ${regionDir(stack, region)}`);
}

async function applyPlan(stack: string, region: Region, services: readonly ServiceSpec[], steps: readonly Step[], timeoutMs: number): Promise<void> {
  const started = Date.now();
  for (const step of steps) {
    if ((step.action === 'stop' || step.action === 'restart') && step.current) await stopService(step.current);
  }
  const toStart = steps.filter((s) => s.action === 'start' || s.action === 'restart');
  await Promise.all(toStart.map((s) => (s.current ? waitReaped(s.current.pid) : undefined)));
  for (const step of toStart) {
    for (const port of step.spec!.ports) {
      if (!(await portFree(port, LOOPBACK))) {
        throw failure(`port ${port} of ${step.name} is in use by another process; change stacks.${stack}.basePort or stop that process`);
      }
    }
  }
  const records = new Map<string, ServiceState>();
  for (const step of steps) if (step.action === 'keep' && step.current) records.set(step.name, step.current);
  for (const step of toStart) {
    const spec = step.spec!;
    const pid = startService(spec, serviceEnv(process.env));
    records.set(spec.name, {
      name: spec.name, kind: spec.kind, addr: spec.addr, metricsAddr: spec.metricsAddr, grpcAddr: spec.grpcAddr, pid, configHash: spec.configHash, dataDir: spec.dataDir,
      logFile: spec.logFile, healthUrl: spec.healthUrl, argv: spec.argv, startedAt: new Date().toISOString(),
    });
  }
  const ordered = services.map((s) => records.get(s.name)!);
  writeState(stack, region, ordered);
  await waitForStack(stack, region, ordered, timeoutMs);
  const shown = [...ordered.map((r) => r.name), ...steps.filter((s) => s.action === 'stop').map((s) => s.name)];
  const rows = shown.map((name) => {
    const step = steps.find((s) => s.name === name)!;
    const record = records.get(name) ?? step.current!;
    return [...serviceCells(record), String(record.pid), STATE_WORD[step.action]];
  });
  print(formatTable([...SERVICE_HEADER, 'PID', 'STATE'], rows));
  print(`stack ${stack} (${region}) is up: ${ordered.length} services healthy in ${((Date.now() - started) / 1000).toFixed(2)} s`);
}

const STATE_WORD: Record<Step['action'], string> = { start: 'started', restart: 'restarted', keep: 'unchanged', stop: 'stopped' };

async function waitForStack(stack: string, region: Region, records: readonly ServiceState[], timeoutMs: number): Promise<void> {
  const targets = records.map((r) => ({ name: r.name, healthUrl: r.healthUrl, alive: () => isOurProcess(r) }));
  const result = await waitHealthy(targets, timeoutMs, progressPrinter('waiting for'));
  if (result.ok) return;
  const record = records.find((r) => r.name === result.service)!;
  throw failure(
    `${result.service} ${result.reason}; last lines of ${record.logFile}:\n${logTail(record.logFile)}\n` +
      `(the other services keep running; stop them with: blobstore down ${stack} --region ${region})`,
  );
}
