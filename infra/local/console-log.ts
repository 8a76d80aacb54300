import { formatDuration } from '../../lib/domain/duration.ts';
import { printable, printableJson } from '../../lib/printable.ts';

/**
 * The local runtime's console. The handlers log what happened as Powertools JSON lines (on
 * Lambda, for CloudWatch Logs Insights); on a developer's terminal each event becomes one
 * short line instead: `registered shop/web-10.0.0.12 (connection abc=)`,
 * `shop/web-10.0.0.12 healthy -> false: HTTP 503`, a refusal with its status and reason.
 * `--log-format json` keeps the raw lines.
 *
 * Whatever an agent sent (a health message, its namespace, group or labels, a close reason)
 * is escaped on the way out (lib/printable.ts): one event is one line, and no escape sequence
 * an agent chose reaches the developer's terminal.
 *
 * Levels (LOG_LEVEL): events are INFO; the handlers' other INFO lines (a token accepted, a
 * sweep that found nothing, the gateway's own connected/disconnected) are chatter, shown at
 * DEBUG. Warnings and errors are shown at their level.
 */
export type LogFormat = 'human' | 'json';

export const LOG_LEVELS = [
  'TRACE',
  'DEBUG',
  'INFO',
  'WARN',
  'ERROR',
  'CRITICAL',
  'SILENT',
] as const;
export type ConsoleLevel = (typeof LOG_LEVELS)[number];

export interface ConsoleSettings {
  format: LogFormat;
  level: ConsoleLevel;
}

export interface RenderContext {
  /** The sweep policy's grace period, for `swept ... after 5m grace`. */
  gracePeriodMs: number;
  maxConnectionAgeMs: number;
  level: ConsoleLevel;
}

type LogRecord = Record<string, unknown>;

const RANK: Record<ConsoleLevel, number> = {
  TRACE: 6,
  DEBUG: 8,
  INFO: 12,
  WARN: 16,
  ERROR: 20,
  CRITICAL: 24,
  SILENT: 28,
};

/** The Powertools level that lets every event through to the console, whatever it shows. */
export function loggerLevelFor(settings: ConsoleSettings): ConsoleLevel {
  if (settings.format === 'json') return settings.level;
  return RANK[settings.level] < RANK.INFO ? settings.level : 'INFO';
}

/** What Powertools and the Lambda context add to every line: not news on a terminal. */
const ENVELOPE = new Set([
  'level',
  'message',
  'timestamp',
  'service',
  'cold_start',
  'function_arn',
  'function_memory_size',
  'function_name',
  'function_request_id',
  'sampling_rate',
  'xray_trace_id',
]);

/** Connections refused by the authorizer whose reason was logged before the gateway's line. */
const REMEMBERED_REASONS = 256;

/**
 * Turns one Powertools record into the console's line, or undefined when it is not shown at
 * this level. Stateful only to make a refusal one line: the authorizer logs why, and the
 * gateway then logs that it refused the upgrade.
 */
export function createRenderer(context: RenderContext): (record: LogRecord) => string | undefined {
  const reasons = new Map<string, string>();
  const remember = (connectionId: unknown, reason: string) => {
    if (typeof connectionId !== 'string') return;
    reasons.set(connectionId, reason);
    if (reasons.size > REMEMBERED_REASONS) reasons.delete(reasons.keys().next().value as string);
  };
  const shows = (level: ConsoleLevel) => RANK[level] >= RANK[context.level];

  return (record) => {
    const level = levelOf(record.level);
    const event = renderEvent(record, context, remember, reasons);
    const stamp = time(record.timestamp);
    if (event === null) return undefined;
    if (event !== undefined) return shows(event.level) ? `${stamp} ${event.text}` : undefined;
    // Not an event: warnings and errors at their level, INFO chatter only at DEBUG.
    const shownAt: ConsoleLevel = level === 'INFO' ? 'DEBUG' : level;
    return shows(shownAt) ? `${stamp} ${level} ${generic(record)}` : undefined;
  };
}

type Event = { level: ConsoleLevel; text: string } | null | undefined;

/** null: part of an event already told (or about to be); undefined: not an event. */
function renderEvent(
  record: LogRecord,
  context: RenderContext,
  remember: (connectionId: unknown, reason: string) => void,
  reasons: Map<string, string>,
): Event {
  const { message, entry, connectionId, outcome } = record;
  const connection = typeof connectionId === 'string' ? ` (connection ${connectionId})` : '';
  switch (message) {
    case 'workload connected':
      if (outcome === 'created') return info(`registered ${entry}${connection}`);
      if (outcome === 'reconnected') return info(`reconnected ${entry}${connection}`);
      return info(`${entry} also held by connection ${connectionId}`);
    case 'workload disconnected': {
      const dropped = Array.isArray(record.phantomHoldersDropped)
        ? `; dropped ${record.phantomHoldersDropped.length} gone connection(s)`
        : '';
      if (outcome === 'disconnected') {
        return info(
          `disconnected ${entry} (last holder left: connection ${connectionId}${dropped})`,
        );
      }
      if (outcome === 'still-held') {
        return info(`connection ${connectionId} left ${entry}; still held by another${dropped}`);
      }
      return undefined;
    }
    case 'health reported': {
      // Only changes: an agent reports every probe period.
      if (outcome !== 'transitioned') return null;
      const reason = typeof record.reason === 'string' ? `: ${record.reason}` : '';
      return info(`${entry} healthy -> ${String(record.healthy)}${reason}`);
    }
    case 'workload draining':
      return info(`${entry} healthy -> false: Draining (its agent is stopping)${connection}`);
    case 'entry swept':
      return info(
        record.reason === 'stale'
          ? `swept ${entry}: still marked connected 1.5 x ${formatDuration(context.maxConnectionAgeMs)} after its last connect`
          : `swept ${entry} after ${formatDuration(context.gracePeriodMs)} grace`,
      );
    case 'join token used for another namespace':
      remember(
        connectionId,
        `join token of namespace ${record.tokenNamespace} used for namespace ${record.requestedNamespace}`,
      );
      return null;
    case 'request refused': {
      const reason = `${record.code}: ${record.reason}`;
      if (record.function_name === 'registrar-authorize') {
        remember(connectionId, reason);
        return null;
      }
      const route =
        typeof record.routeKey === 'string'
          ? `${record.routeKey} message`
          : routeOf(record.function_name);
      if (record.function_name === 'registrar-connect') remember(connectionId, '');
      return warn(`refused ${route} with ${record.statusCode} ${reason}${connection}`);
    }
    case 'gateway: upgrade refused by the authorizer':
    case 'gateway: upgrade refused by $connect': {
      const told = typeof connectionId === 'string' ? reasons.get(connectionId) : undefined;
      if (typeof connectionId === 'string') reasons.delete(connectionId);
      if (told === '') return null; // $connect's own refusal line said it all
      const reason = told ?? (typeof record.reason === 'string' ? record.reason : undefined);
      const because = reason === undefined ? '' : ` ${reason}`;
      return warn(`refused $connect with ${record.statusCode}${because}${connection}`);
    }
    case 'projection failing':
      return warn(`projection into cluster ${clusterOf(record)} failing: ${record.cause}`);
    case 'projection recovered':
      return info(`projection into cluster ${clusterOf(record)} recovered`);
    case 'projected':
      return info(
        `projected: ${record.action} ${record.kind} ${record.namespace}/${record.name} in cluster ${record.cluster}`,
      );
    case 'entry not projected':
      return warn(`not projected: ${record.kind} ${record.entry}: ${record.reason}`);
    case 'template rolled out':
      return info(
        `rolled out the template of ${record.group} to ${record.entries} more entr${record.entries === 1 ? 'y' : 'ies'}`,
      );
    case 'rollout complete':
      return info(
        `rollout of ${record.group} complete: its entries are on generation ${record.generation}`,
      );
    case 'group synced':
      return info(String(record.change));
    case 'group removed: it was deleted in the cluster':
      return info(
        `removed WorkloadGroup ${record.group} and its ${record.entries} entr${record.entries === 1 ? 'y' : 'ies'}: deleted in the cluster`,
      );
    case 'endpoint refused':
      return warn(`refused endpoint: ${record.entry}: ${record.reason}`);
    case 'gateway: closing connection':
      return info(`gateway closes connection ${connectionId}: ${record.why}`);
    case 'connections silent past their heartbeat were closed; their entries left':
      return warn(silentLine(record));
    default:
      return typeof message === 'string' && SWEEP_MODE.test(message)
        ? warn(sweepModeLine(message, record))
        : undefined;
  }
}

/** The sweeper's fail-static line (functions/sweeper.ts): `sweep slowed`, `sweep mode changed: ...`. */
const SWEEP_MODE = /^sweep (mode changed: \S+ -> \S+|slowed|held|hold-expired|released)$/;

/** Cells named in full up to this many; more are counted. */
const CELLS_SHOWN = 5;

/**
 * `sweep slowed: slowed in pay#us-east-1/us-east-1a until ...; deferred this run: 0 held, 2
 * slowed`: the fleet's word and each slowed or held cell, in the words of `registrar sweep
 * status`, so the two never disagree.
 */
function sweepModeLine(message: string, record: LogRecord): string {
  const cells = (value: unknown) => {
    const list = Array.isArray(value) ? value.map(String) : [];
    const more = list.length > CELLS_SHOWN ? ` and ${list.length - CELLS_SHOWN} more` : '';
    return `${list.slice(0, CELLS_SHOWN).join(', ')}${more}`;
  };
  const parts: string[] = [];
  if (Array.isArray(record.heldCells) && record.heldCells.length > 0) {
    parts.push(`held in ${cells(record.heldCells)}`);
  }
  if (Array.isArray(record.slowedCells) && record.slowedCells.length > 0) {
    parts.push(`slowed in ${cells(record.slowedCells)}`);
  }
  if (typeof record.why === 'string') parts.push(`why: ${record.why}`);
  const deferred = record.deferred as { held?: unknown; slowed?: unknown } | undefined;
  if (deferred && typeof deferred === 'object') {
    parts.push(
      `deferred this run: ${Number(deferred.held ?? 0)} held, ${Number(deferred.slowed ?? 0)} slowed`,
    );
  }
  return parts.length > 0 ? `${message}: ${parts.join('; ')}` : message;
}

/**
 * `sweep closed 3 connections silent past their heartbeat (pay: 1, shop: 2)`: the count the
 * `SilentHoldersDropped` metric carries, by namespace as the log has it, and the closes that
 * failed (they hold nothing anyway: the silence was proven, the holders dropped).
 */
function silentLine(record: LogRecord): string {
  const silent = Number(record.silent ?? 0);
  const byNamespace =
    record.byNamespace && typeof record.byNamespace === 'object'
      ? Object.entries(record.byNamespace as Record<string, unknown>)
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(([namespace, count]) => `${namespace}: ${Number(count)}`)
      : [];
  const whose = byNamespace.length > 0 ? ` (${byNamespace.join(', ')})` : '';
  const failed = Number(record.closeFailed ?? 0);
  const closes =
    failed > 0
      ? `; ${failed} close${failed === 1 ? '' : 's'} failed${typeof record.firstCloseFailure === 'string' ? `: ${record.firstCloseFailure}` : ''}`
      : '';
  const connections = silent === 1 ? 'connection silent past its' : 'connections silent past their';
  return `sweep closed ${silent} ${connections} heartbeat${whose}${closes}`;
}

const info = (text: string): Event => ({ level: 'INFO', text });
const warn = (text: string): Event => ({ level: 'WARN', text });

function clusterOf(record: LogRecord): string {
  return `${record.cluster} (${record.server})`;
}

function routeOf(functionName: unknown): string {
  switch (functionName) {
    case 'registrar-connect':
      return '$connect';
    case 'registrar-disconnect':
      return '$disconnect';
    default:
      return String(functionName ?? 'request');
  }
}

function levelOf(value: unknown): ConsoleLevel {
  const level = String(value).toUpperCase();
  return (LOG_LEVELS as readonly string[]).includes(level) ? (level as ConsoleLevel) : 'INFO';
}

/** Local wall-clock time of the record: the terminal is read by a person in their zone. */
function time(timestamp: unknown): string {
  const at = typeof timestamp === 'string' ? new Date(timestamp) : new Date();
  const valid = Number.isNaN(at.getTime()) ? new Date() : at;
  return [valid.getHours(), valid.getMinutes(), valid.getSeconds()]
    .map((part) => String(part).padStart(2, '0'))
    .join(':');
}

/** `message key=value ...` without the envelope; an error as `name: message`. */
function generic(record: LogRecord): string {
  const fields = Object.entries(record)
    .filter(([key]) => !ENVELOPE.has(key))
    .map(([key, value]) => `${key}=${fieldText(value)}`);
  const source =
    typeof record.function_name === 'string' && record.level !== 'INFO'
      ? ` (${record.function_name})`
      : '';
  return [`${String(record.message)}${source}`, ...fields].join(' ');
}

function fieldText(value: unknown): string {
  if (typeof value === 'string') return /\s/.test(value) ? JSON.stringify(value) : value;
  if (value && typeof value === 'object' && 'message' in value) {
    const { name, message } = value as { name?: unknown; message?: unknown };
    return JSON.stringify(`${name ?? 'Error'}: ${message}`);
  }
  return JSON.stringify(value);
}

/**
 * Powertools prints through a `Console` it owns. This one takes each line it would print,
 * renders it and writes the result: the console the local runtime installs on the logger.
 */
export function renderingConsole(
  render: (record: LogRecord) => string | undefined,
  write: (line: string) => void,
): Pick<Console, 'debug' | 'info' | 'warn' | 'error' | 'log' | 'trace'> {
  const print = (line: unknown) => {
    let record: LogRecord | undefined;
    try {
      const parsed: unknown = JSON.parse(String(line));
      if (parsed && typeof parsed === 'object') record = parsed as LogRecord;
    } catch {
      // Not a Powertools line: show it as it is.
    }
    const text = record ? render(record) : String(line);
    if (text !== undefined) write(`${printable(text)}\n`);
  };
  return { debug: print, info: print, warn: print, error: print, log: print, trace: print };
}

/**
 * `--log-format json`: the functions' lines as Powertools prints them, with only what
 * `JSON.stringify` leaves raw (C1 controls, U+2028/2029) escaped; a line that is not JSON
 * is escaped whole, so it too stays one line.
 */
export function jsonConsole(
  write: (line: string) => void,
): Pick<Console, 'debug' | 'info' | 'warn' | 'error' | 'log' | 'trace'> {
  const print = (line: unknown) => {
    const text = String(line);
    write(`${isJson(text) ? printableJson(text) : printable(text)}\n`);
  };
  return { debug: print, info: print, warn: print, error: print, log: print, trace: print };
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * Replaces the logger's console. Powertools has no public hook for where lines go (only a
 * formatter for their shape), so this sets the field it prints through: checked here, so a
 * Powertools upgrade that renames it fails loudly at start instead of printing JSON.
 */
export function installConsole(
  logger: object,
  sink: Pick<Console, 'debug' | 'info' | 'warn' | 'error' | 'log' | 'trace'>,
): void {
  const target = logger as { console?: unknown };
  if (typeof target.console !== 'object' || target.console === null) {
    throw new Error('this Powertools Logger has no console field to render the local console');
  }
  target.console = sink;
}

/** LOG_LEVEL (or POWERTOOLS_LOG_LEVEL), validated: a typo must not silence the console. */
export function parseConsoleLevel(value: string, source: string): ConsoleLevel {
  const level = value.trim().toUpperCase();
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new Error(
      `invalid ${source} '${value}': must be one of ${LOG_LEVELS.join(', ').toLowerCase()}`,
    );
  }
  return level as ConsoleLevel;
}
