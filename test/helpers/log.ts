/** Reading log lines: a capturing logger for in-process tests, and the JSON lines of a process. */
import { createLogger, type Logger } from '../../src/log/logger.js';

/** One JSON log line as src/log writes it. */
export interface LogLine {
  level: string;
  time: string;
  name: string;
  pid: number;
  msg: string;
  node?: string;
  reqId?: string;
  [field: string]: unknown;
}

/** A json-format logger at `level` whose lines are kept, parsed, in `lines`. */
export function captureLogger(level = 'info'): { log: Logger; lines: LogLine[]; text: () => string } {
  const lines: LogLine[] = [];
  const raw: string[] = [];
  const log = createLogger({
    level, format: 'json', name: 'test', node: 'test-node',
    destination: { write: (s: string) => { raw.push(s); lines.push(JSON.parse(s) as LogLine); } },
  });
  return { log, lines, text: () => raw.join('') };
}

/** The JSON log lines in a process' output (other lines, from modules not yet converted, are skipped). */
export function logLines(output: string): LogLine[] {
  return output.split('\n').flatMap((line) => {
    if (!line.startsWith('{')) return [];
    try {
      return [JSON.parse(line) as LogLine];
    } catch {
      return [];
    }
  });
}

/** The messages of a process' JSON log lines. */
export const logMessages = (output: string): string[] => logLines(output).map((l) => l.msg);

/** The URL (or gRPC host:port) a listener logged at start (`listener` field: api, metrics, grpc, orders). */
export function listenerAddress(output: string, listener: string): string | undefined {
  const line = logLines(output).find((l) => l.listener === listener);
  return line === undefined ? undefined : String(line.url ?? line.address);
}

/** The port of a listener logged at start. */
export function listenerPort(output: string, listener: string): number | undefined {
  const address = listenerAddress(output, listener);
  const m = address === undefined ? null : /:(\d+)$/.exec(address);
  return m ? Number(m[1]) : undefined;
}
