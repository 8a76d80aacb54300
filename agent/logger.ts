import { printable, printableJson } from '../lib/printable.ts';

/**
 * One line per state change, as text for people or JSON for log pipelines (`--log-format
 * json`). Fields never carry a token or a signed URL: callers pass `redactUrl` output.
 * What the registrar or a probe said (a refusal's reason, a close reason, a command's output)
 * is escaped, so one line stays one line and no escape sequence reaches the terminal.
 */
export type LogFormat = 'text' | 'json';
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, string | number | boolean | undefined>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

export interface LoggerOptions {
  format: LogFormat;
  debug?: boolean;
  /** Where lines go; stderr by default, so systemd's journal gets them. */
  write?: (line: string) => void;
  now?: () => number;
}

export function createLogger(options: LoggerOptions): Logger {
  const write = options.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const now = options.now ?? Date.now;
  const emit = (level: LogLevel, message: string, fields: LogFields = {}): void => {
    if (level === 'debug' && !options.debug) return;
    const time = new Date(now()).toISOString();
    const defined = Object.entries(fields).filter(([, value]) => value !== undefined);
    if (options.format === 'json') {
      write(
        printableJson(
          JSON.stringify({ time, level, msg: message, ...Object.fromEntries(defined) }),
        ),
      );
      return;
    }
    const suffix = defined.map(([key, value]) => ` ${key}=${formatValue(value)}`).join('');
    write(printable(`${time} ${level.toUpperCase().padEnd(5)} ${message}${suffix}`));
  };
  return {
    debug: (message, fields) => emit('debug', message, fields),
    info: (message, fields) => emit('info', message, fields),
    warn: (message, fields) => emit('warn', message, fields),
    error: (message, fields) => emit('error', message, fields),
  };
}

function formatValue(value: string | number | boolean | undefined): string {
  const text = String(value);
  return /[\s"=]/.test(text) ? JSON.stringify(text) : text;
}

/** A logger that keeps lines in memory: for tests and for the benchmark. */
export function memoryLogger(format: LogFormat = 'json'): Logger & { lines: string[] } {
  const lines: string[] = [];
  return Object.assign(createLogger({ format, debug: true, write: (line) => lines.push(line) }), {
    lines,
  });
}

/** The URL without its query: the query may hold a SigV4 signature or session token. */
export function redactUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
}
