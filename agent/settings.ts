import { formatDuration } from '../lib/domain/duration.ts';
import type { AgentSetting } from './setting-shape.ts';
import { SIDECAR_SETTINGS } from './sidecar-settings.ts';

export type { AgentSetting, SettingKind } from './setting-shape.ts';

/**
 * Every setting the agent accepts, in one table: the flags, the `REGISTRAR_AGENT_*`
 * variables, `--help` and the defaults it shows are all derived from it, so none of them can
 * leave a setting out (test/unit/agent-settings.test.ts also holds it to the schema in
 * config.ts and to the table in docs/agent.md).
 */

export interface AgentTiming {
  /** API Gateway closes a connection idle for 10 min; 5 min keeps a wide margin. */
  pingIntervalMs: number;
  /** API Gateway's hard limit (2 h); the agent rotates at a jittered point before it. */
  maxConnectionAgeMs: number;
  /** Upgrade (and $connect) must finish within this. */
  connectTimeoutMs: number;
  /** A health, describe or ping without a reply within this is sent again / fails. */
  ackTimeoutMs: number;
  backoffBaseMs: number;
  backoffCapMs: number;
  /** After a refusal (400/401/403/404/409/426) retrying soon cannot help: wait longer. */
  refusalBackoffMs: number;
  refusalBackoffCapMs: number;
  /**
   * After a 404 (the WorkloadGroup is missing) the longest wait between attempts: unlike a
   * bad token, a missing group is fixed by an operator's `apply` without touching the VM (an
   * accidental `delete wg` re-applied), and the VM should be back within this once it is.
   */
  missingGroupRetryMs: number;
  /** Connections that die younger than this, in a row with no failed attempt between, back off. */
  stableAfterMs: number;
  /** Multiplies the probe's seconds; below 1 only for tests and the benchmark. */
  probeTimeScale: number;
  /**
   * On SIGTERM/SIGINT, how long the draining connection stays open after the registrar marked
   * the entry Healthy False (Draining), so the mesh stops sending new requests before the VM
   * leaves; 0: no drain, close at once.
   */
  drainDelayMs: number;
  /**
   * This long after the first registration, the agent asks the kernel to take back the memory
   * its start-up used (agent/memory-reclaim.ts); 0: never.
   */
  memoryReclaimAfterMs: number;
}

export const DEFAULT_TIMING: Readonly<AgentTiming> = Object.freeze({
  pingIntervalMs: 5 * 60_000,
  maxConnectionAgeMs: 2 * 3_600_000,
  connectTimeoutMs: 10_000,
  ackTimeoutMs: 10_000,
  backoffBaseMs: 1_000,
  backoffCapMs: 60_000,
  refusalBackoffMs: 30_000,
  refusalBackoffCapMs: 10 * 60_000,
  // Every VM of a re-applied group back within 20 s + one connect (the goal: 30 s).
  missingGroupRetryMs: 20_000,
  stableAfterMs: 60_000,
  probeTimeScale: 1,
  drainDelayMs: 10_000,
  memoryReclaimAfterMs: 60_000,
});

/**
 * The longest drain delay. Rotation stops while draining, and a connection may be as old as
 * 108 min (90 % of API Gateway's 2 h) when the drain begins: 120 - 108 = 12 min remain, so a
 * delay of at most 10 min always ends before API Gateway cuts the connection.
 */
export const MAX_DRAIN_DELAY_MS = 10 * 60_000;

export const DEFAULT_IMDS_URL = 'http://169.254.169.254';

const timing = (
  key: keyof AgentTiming,
  flag: string,
  help: string,
): Pick<AgentSetting, 'key' | 'flag' | 'arg' | 'env' | 'kind' | 'default' | 'help'> => {
  const name = key.replace(/Ms$/, '');
  return {
    key: `timing.${name}`,
    flag,
    arg: key === 'probeTimeScale' ? '<n>' : '<d>',
    env: `REGISTRAR_AGENT_${flag.replaceAll('-', '_').toUpperCase()}`,
    kind: 'value',
    default:
      key === 'probeTimeScale' ? String(DEFAULT_TIMING[key]) : formatDuration(DEFAULT_TIMING[key]),
    help,
  };
};

export const AGENT_SETTINGS: readonly AgentSetting[] = Object.freeze([
  {
    key: 'url',
    flag: 'url',
    arg: '<url>',
    env: 'REGISTRAR_AGENT_URL',
    kind: 'value',
    default: 'required',
    help: 'registrar WebSocket URL (wss://<api>.execute-api.<region>.amazonaws.com/<stage>)',
  },
  {
    key: 'insecure',
    flag: 'insecure',
    env: 'REGISTRAR_AGENT_INSECURE',
    kind: 'switch',
    default: 'false',
    help: 'allow a ws:// URL to a host that is not loopback: the token or signed request, the identity document and the probe travel in clear',
  },
  {
    key: 'group',
    flag: 'group',
    arg: '<name>',
    env: 'REGISTRAR_AGENT_GROUP',
    kind: 'value',
    default: 'required',
    help: 'the WorkloadGroup to join',
  },
  {
    key: 'namespace',
    flag: 'namespace',
    arg: '<ns>',
    env: 'REGISTRAR_AGENT_NAMESPACE',
    kind: 'value',
    default: 'required',
    help: "the group's namespace",
  },
  {
    key: 'network',
    flag: 'network',
    arg: '<name>',
    env: 'REGISTRAR_AGENT_NETWORK',
    kind: 'value',
    default: "the group template's",
    help: 'mesh network; also part of the entry name',
  },
  {
    key: 'labels',
    flag: 'label',
    arg: '<k=v>',
    env: 'REGISTRAR_AGENT_LABELS',
    kind: 'list',
    default: 'none',
    help: "extra label, repeatable (variable: k=v,k=v); wins over the group's",
  },
  {
    key: 'ip',
    flag: 'ip',
    arg: '<addr>',
    env: 'REGISTRAR_AGENT_IP',
    kind: 'list',
    default: 'from IMDS',
    help: "address to register, repeatable (variable: a,b); the first is the entry's",
  },
  {
    key: 'locality',
    flag: 'locality',
    arg: '<r/z[/s]>',
    env: 'REGISTRAR_AGENT_LOCALITY',
    kind: 'value',
    default: 'from IMDS',
    help: 'region[/zone[/subzone]]',
  },
  {
    key: 'auth.mode',
    flag: 'auth',
    arg: 'token|iam',
    env: 'REGISTRAR_AGENT_AUTH',
    kind: 'value',
    default: 'token',
    help: 'token: a join token; iam: SigV4 with the instance profile',
  },
  {
    key: 'auth.tokenFile',
    flag: 'token-file',
    arg: '<path>',
    env: 'REGISTRAR_AGENT_TOKEN_FILE',
    kind: 'value',
    default: 'none',
    help: 'join token file, re-read on every connect',
  },
  {
    key: 'auth.token',
    env: 'REGISTRAR_AGENT_TOKEN',
    kind: 'value',
    default: 'none',
    help: 'the join token itself (no flag: flags show in ps)',
  },
  {
    key: 'auth.region',
    flag: 'region',
    arg: '<region>',
    env: 'REGISTRAR_AGENT_REGION',
    kind: 'value',
    default: 'from the URL, else IMDS',
    help: 'IAM signing region (custom domains)',
  },
  {
    key: 'auth.identityDocument',
    flag: 'identity-document',
    arg: '<file>',
    env: 'REGISTRAR_AGENT_IDENTITY_DOCUMENT',
    kind: 'value',
    default: 'from IMDS (iam)',
    help: 'IAM mode: the EC2 instance identity document, exactly as IMDS serves it',
  },
  {
    key: 'auth.identitySignature',
    flag: 'identity-signature',
    arg: '<file>',
    env: 'REGISTRAR_AGENT_IDENTITY_SIGNATURE',
    kind: 'value',
    default: 'from IMDS (iam)',
    help: "IAM mode: the document's base64 RSA signature (instance-identity/signature)",
  },
  {
    key: 'logFormat',
    flag: 'log-format',
    arg: 'text|json',
    env: 'REGISTRAR_AGENT_LOG_FORMAT',
    kind: 'value',
    default: 'text',
    help: 'log lines for people or for pipelines',
  },
  {
    key: 'debug',
    flag: 'debug',
    env: 'REGISTRAR_AGENT_DEBUG',
    kind: 'switch',
    default: 'false',
    help: 'log every protocol message sent and received (JSON, never a credential)',
  },
  {
    key: 'probeUser',
    flag: 'probe-user',
    arg: '<user>',
    env: 'REGISTRAR_AGENT_PROBE_USER',
    kind: 'value',
    default: "nobody as root, else the agent's own",
    help: 'who exec probes run as (never root); only an agent started as root can name another user',
  },
  {
    key: 'imds.enabled',
    flag: 'no-imds',
    env: 'REGISTRAR_AGENT_IMDS',
    kind: 'off-switch',
    default: 'true',
    help: 'skip the EC2 instance metadata service (variable: false); then --ip is required',
  },
  {
    key: 'imds.url',
    flag: 'imds-url',
    arg: '<url>',
    env: 'REGISTRAR_AGENT_IMDS_URL',
    kind: 'value',
    default: DEFAULT_IMDS_URL,
    help: 'instance metadata service',
  },
  {
    key: 'imds.timeout',
    flag: 'imds-timeout',
    arg: '<d>',
    env: 'REGISTRAR_AGENT_IMDS_TIMEOUT',
    kind: 'value',
    default: '1s',
    help: 'per metadata request; off EC2 nothing answers, so keep it short',
  },
  timing(
    'pingIntervalMs',
    'ping-interval',
    "keepalive, inside API Gateway's 10-minute idle timeout",
  ),
  timing(
    'maxConnectionAgeMs',
    'max-connection-age',
    "API Gateway's hard limit; rotation happens before it",
  ),
  timing('connectTimeoutMs', 'connect-timeout', 'an upgrade (and $connect) must finish within it'),
  timing('ackTimeoutMs', 'ack-timeout', 'wait for a reply before sending again'),
  timing('backoffBaseMs', 'backoff-base', 'first wait after a failed attempt (doubles)'),
  timing('backoffCapMs', 'backoff-cap', 'longest wait between failed attempts'),
  timing('refusalBackoffMs', 'refusal-backoff', 'first wait after a refusal (doubles)'),
  timing('refusalBackoffCapMs', 'refusal-backoff-cap', 'longest wait after refusals'),
  timing(
    'missingGroupRetryMs',
    'missing-group-retry',
    'longest wait between attempts while the WorkloadGroup is missing (404)',
  ),
  timing(
    'stableAfterMs',
    'stable-after',
    'connections dying younger than this in a row keep backing off (no tight loop)',
  ),
  timing(
    'drainDelayMs',
    'drain-delay',
    'on SIGTERM/SIGINT: after the registrar marks the entry Draining, wait this long before closing (0: no drain; at most 10m)',
  ),
  timing(
    'memoryReclaimAfterMs',
    'memory-reclaim-after',
    "this long after the first registration, give the start-up's memory back to the kernel when the agent has its cgroup to itself (0: never)",
  ),
  timing(
    'probeTimeScale',
    'probe-time-scale',
    "tests and benchmarks only: multiplies the probe's seconds (at most 1)",
  ),
  ...SIDECAR_SETTINGS,
] satisfies AgentSetting[]);

/** `--config`: where the YAML file is; not a setting itself. */
export const CONFIG_FILE_OPTION = { flag: 'config', arg: '<file>', env: 'REGISTRAR_AGENT_CONFIG' };

/** How a setting's flag is written: `--url <url>`, `--debug`. */
export function flagUsage(setting: AgentSetting): string | undefined {
  if (setting.flag === undefined) return undefined;
  return setting.arg ? `--${setting.flag} ${setting.arg}` : `--${setting.flag}`;
}

/** `registrar-agent --help`: every setting with its flag, variable, YAML key and default. */
export function agentUsage(): string {
  const width = 30;
  const lines = AGENT_SETTINGS.map((setting) => {
    const flag = flagUsage(setting) ?? '(no flag)';
    const head = `  ${flag.padEnd(width - 3)} ${setting.help}`;
    const where = [
      setting.env ? `env ${setting.env}` : undefined,
      `yaml ${setting.key}`,
      `default ${setting.default}`,
    ].filter((part) => part !== undefined);
    return `${head}\n${' '.repeat(width)}${where.join(', ')}`;
  });
  return [
    'usage: registrar-agent --url <wss://...> --group <name> --namespace <ns> [options]',
    '',
    'registers this VM as a WorkloadEntry and reports its health (see docs/agent.md)',
    'each setting comes from a flag, a variable or the YAML file of --config;',
    'flags win over variables, variables over the file; durations: 500ms, 10s, 5m, 2h, 1h30m',
    '',
    `  ${`--config ${CONFIG_FILE_OPTION.arg}`.padEnd(width - 3)} YAML file with the settings below`,
    `${' '.repeat(width)}env ${CONFIG_FILE_OPTION.env}`,
    ...lines,
    `  ${'--version'.padEnd(width - 3)} print registrar-agent <version> and exit`,
    `  ${'-h, --help'.padEnd(width - 3)} this text`,
  ].join('\n');
}
