/**
 * The one logger of a process (pino): JSON lines with `time` (ISO 8601), `level` (its name),
 * `name` (blobstore or orders), `pid`, `node` (the node ID, on a node), `reqId` on lines about one
 * request, `err` for errors, and `msg`. Created once at start from the settings `logLevel` and
 * `logFormat` and passed down; modules log through it or a child of it, never through console.
 *
 *   json    one JSON object a line on stdout (what deployed stacks write to their log files)
 *   pretty  pino-pretty on stdout: one coloured line with time, level, node, message and fields
 *   auto    pretty when stdout is a terminal, json otherwise
 *
 * Writes are synchronous, so a line logged just before process.exit is not lost. Authorization
 * values are redacted wherever they would appear in a logged object; callers must still never
 * pass tokens, and test/auth proves that none reaches the output.
 */
import { pino, stdSerializers, stdTimeFunctions, type DestinationStream, type Logger as PinoLogger } from 'pino';
import PinoPretty from 'pino-pretty';

export type Logger = PinoLogger;

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export interface LoggerOptions {
  readonly level: LogLevel | string;
  readonly format: LogFormat | string;
  /** The program: `blobstore` for a node, `orders` for the orders service. */
  readonly name: string;
  /** The node ID, on every line of a node (the `node` label of its metrics, too). */
  readonly node?: string;
  /** Where lines go (tests capture them); stdout by default. */
  readonly destination?: DestinationStream;
  /** Whether the destination is a terminal (for `auto`); stdout's isTTY by default. */
  readonly tty?: boolean;
}

/** Fields whose values never reach the output, wherever a caller might pass them. */
const REDACTED = [
  'authorization', 'token', 'password', 'secret',
  '*.authorization', '*.token', '*.password', '*.secret',
  'headers.authorization', '*.headers.authorization',
];

/** Whether `format` resolves to pretty output. */
export function isPretty(format: string, tty: boolean): boolean {
  return format === 'pretty' || (format === 'auto' && tty);
}

export function createLogger(options: LoggerOptions): Logger {
  const tty = options.tty ?? process.stdout.isTTY === true;
  const pretty = isPretty(options.format, tty);
  const base: Record<string, unknown> = { pid: process.pid };
  if (options.node !== undefined) base.node = options.node;
  const destination = options.destination
    ?? (pretty
      ? PinoPretty({
        sync: true, colorize: tty, singleLine: true, translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l', ignore: 'pid,node',
        messageFormat: '{if node}[{node}] {end}{msg}',
      })
      : pino.destination({ dest: 1, sync: true }));
  return pino(
    {
      name: options.name,
      level: options.level,
      base,
      timestamp: stdTimeFunctions.isoTime,
      // Level names ("info") rather than numbers: what log shippers and people grep for. pino-pretty
      // reads the numbers, so the pretty form keeps them.
      formatters: pretty ? {} : { level: (label) => ({ level: label }) },
      serializers: { err: stdSerializers.err },
      redact: { paths: REDACTED, censor: '[redacted]' },
    },
    destination,
  );
}

/** A logger that writes nothing (in-process tests and tools that need one). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/**
 * Node's process warnings into the service's log instead of plain text on stderr, so the log stays
 * one format. DEP0123 (an IP address as the TLS server name) comes from grpc-js's channels to
 * peers named by address; their certificates are still checked against the address, so it goes at
 * debug level. Any other warning goes at warn.
 */
export function routeProcessWarnings(log: Logger): void {
  process.removeAllListeners('warning');
  process.on('warning', (warning: Error & { code?: string }) => {
    const fields = { warning: warning.name, code: warning.code };
    if (warning.code === 'DEP0123') log.debug(fields, warning.message);
    else log.warn(fields, warning.message);
  });
}
