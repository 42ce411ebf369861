/**
 * A CLI failure with its exit status: 2 for usage errors (bad arguments, bad configuration values,
 * rejected before any work), 1 for failures while working. main.ts prints the message and exits
 * with `exitCode`.
 */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    message: string,
    readonly exitCode: 1 | 2,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export const usageError = (message: string): CliError => new CliError(message, 2);
export const failure = (message: string, cause?: unknown): CliError => new CliError(message, 1, { cause });
