import type { Region, StackDefinition } from './settings.js';
import type { DeployState, ServiceState } from './deploy-state.js';
import { isOurProcess } from './processes.js';
import { type ServiceInputs, type ServiceSpec, desiredServices } from './stack.js';

/**
 * The difference between what runs (deploy.json, checked against the live processes) and what the
 * stack definition asks for. Reads only; `deploy` applies it, `deploy --dry-run` prints it.
 */

export interface Step {
  readonly name: string;
  readonly action: 'start' | 'restart' | 'keep' | 'stop';
  readonly spec?: ServiceSpec;
  readonly current?: ServiceState;
  readonly reason?: string;
}

export function planDeploy(
  stack: StackDefinition,
  region: Region,
  inputs: ServiceInputs,
  state: DeployState | undefined,
): { services: ServiceSpec[]; steps: Step[] } {
  const services = desiredServices(stack, region, inputs);
  const running = new Map((state?.services ?? []).map((s) => [s.name, s]));
  const steps: Step[] = services.map((spec) => {
    const current = running.get(spec.name);
    if (!current) return { name: spec.name, action: 'start', spec };
    if (!isOurProcess(current)) return { name: spec.name, action: 'start', spec, current, reason: 'was not running' };
    if (current.configHash !== spec.configHash) return { name: spec.name, action: 'restart', spec, current, reason: 'configuration changed' };
    return { name: spec.name, action: 'keep', spec, current };
  });
  for (const [name, current] of running) {
    if (services.some((s) => s.name === name) || !isOurProcess(current)) continue;
    steps.push({ name, action: 'stop', current, reason: 'no longer in the stack' });
  }
  return { services, steps };
}
