import { parseIpAddress } from '../lib/domain/address.ts';
import { readAll } from '../lib/validation/fields.ts';
import { agentConfigFields } from './config-fields.ts';
import {
  AgentConfigError,
  type Layer,
  mergeLayers,
  readEnv,
  readFile,
  readFlags,
} from './config-sources.ts';
import type { LogFormat } from './logger.ts';
import { type AgentTiming, agentUsage, DEFAULT_TIMING } from './settings.ts';
import { type SidecarConfig, toSidecarConfig } from './sidecar-settings.ts';

export { agentConfigFields } from './config-fields.ts';
export { AgentConfigError } from './config-sources.ts';
export { type AgentTiming, DEFAULT_IMDS_URL, DEFAULT_TIMING } from './settings.ts';

/** How the agent proves who it is when it connects. */
export type AgentAuth =
  /**
   * A join token, sent as `Authorization: Bearer`; the file (which wins) is re-read on every
   * connect. `tokenSource` says where `token` came from (`REGISTRAR_AGENT_TOKEN`, or the
   * config file's path), so advice about a refused token can say where to replace it.
   */
  | { mode: 'token'; token?: string; tokenFile?: string; tokenSource?: string }
  /**
   * SigV4 with the instance profile; region from here, else the URL, else IMDS. The instance
   * identity document and its signature come from these files when given (both), else from
   * IMDSv2 (agent/identity-evidence.ts).
   */
  | { mode: 'iam'; region?: string; identityDocument?: string; identitySignature?: string };

export interface AgentConfig {
  url: string;
  group: string;
  namespace: string;
  network?: string;
  labels: Record<string, string>;
  auth: AgentAuth;
  /** Overrides discovery; the first is the entry's address. */
  ips: string[];
  locality?: string;
  imds: { enabled: boolean; url: string; timeoutMs: number };
  logFormat: LogFormat;
  debug: boolean;
  /** Who exec probes run as (agent/probes/probe-user.ts); unset: the default there. */
  probeUser?: string;
  timing: AgentTiming;
  /** The Istio sidecar bootstrap (agent/sidecar-bootstrap.ts); absent or disabled: none. */
  sidecar?: SidecarConfig;
}

/**
 * Reads flags, environment and the optional YAML file; throws AgentConfigError naming the
 * source. `--help` and `--version` are answered before anything is validated.
 */
export function loadAgentConfig(
  argv: string[],
  env: Record<string, string | undefined>,
): AgentConfig | 'help' | 'version' {
  const flags = readFlags(argv);
  if (flags.help) return 'help';
  if (flags.version) return 'version';
  const file = flags.configFile ?? env.REGISTRAR_AGENT_CONFIG;
  const layers = [file === undefined ? undefined : readFile(file), readEnv(env), flags.layer];
  return validateAgentConfig(
    mergeLayers(layers.filter((layer): layer is Layer => layer !== undefined)),
  );
}

export function validateAgentConfig(layer: Layer): AgentConfig {
  const parsed = readAll(agentConfigFields, layer.values);
  if (!parsed.ok) {
    const problems = parsed.problems.map(({ path: key, message }) => {
      const head = key.split('.')[0] ?? '';
      const source = layer.sources[key] ?? layer.sources[head];
      return `${key || 'config'}${source && source !== key ? ` (from ${source})` : ''}: ${message}`;
    });
    throw new AgentConfigError(`invalid agent configuration: ${problems.join('; ')}`);
  }
  const v = parsed.value;
  if (v.auth.mode === 'token' && v.auth.token === undefined && v.auth.tokenFile === undefined) {
    throw new AgentConfigError(
      'token mode needs a join token: set REGISTRAR_AGENT_TOKEN or --token-file <path> (create one with registrar token create), or use --auth iam',
    );
  }
  const clear = clearTextProblem(v.url, v.insecure, layer.sources.url ?? 'url');
  if (clear) throw new AgentConfigError(clear);
  const { identityDocument, identitySignature } = v.auth;
  if ((identityDocument === undefined) !== (identitySignature === undefined)) {
    const [given, missing] =
      identityDocument === undefined
        ? ['--identity-signature', '--identity-document']
        : ['--identity-document', '--identity-signature'];
    throw new AgentConfigError(
      `${given} needs ${missing} too: the registrar checks the document against its signature`,
    );
  }
  if (identityDocument !== undefined && v.auth.mode !== 'iam') {
    throw new AgentConfigError(
      '--identity-document and --identity-signature are used only with --auth iam: a join token needs no instance identity document',
    );
  }
  if (!v.imds.enabled && v.ip.length === 0) {
    const from = layer.sources['imds.enabled'];
    const source =
      from?.startsWith('-') || from?.startsWith('REGISTRAR_')
        ? from
        : `imds.enabled: false${from ? ` in ${from}` : ''}`;
    throw new AgentConfigError(
      `${source} needs --ip <address> (or REGISTRAR_AGENT_IP): without the instance metadata service the agent cannot discover this VM's address`,
    );
  }
  const t = v.timing;
  const timing: AgentTiming = {
    pingIntervalMs: t.pingInterval ?? DEFAULT_TIMING.pingIntervalMs,
    maxConnectionAgeMs: t.maxConnectionAge ?? DEFAULT_TIMING.maxConnectionAgeMs,
    connectTimeoutMs: t.connectTimeout ?? DEFAULT_TIMING.connectTimeoutMs,
    ackTimeoutMs: t.ackTimeout ?? DEFAULT_TIMING.ackTimeoutMs,
    backoffBaseMs: t.backoffBase ?? DEFAULT_TIMING.backoffBaseMs,
    backoffCapMs: t.backoffCap ?? DEFAULT_TIMING.backoffCapMs,
    refusalBackoffMs: t.refusalBackoff ?? DEFAULT_TIMING.refusalBackoffMs,
    refusalBackoffCapMs:
      t.refusalBackoffCap ?? Math.max(DEFAULT_TIMING.refusalBackoffCapMs, t.refusalBackoff ?? 0),
    missingGroupRetryMs: t.missingGroupRetry ?? DEFAULT_TIMING.missingGroupRetryMs,
    stableAfterMs: t.stableAfter ?? DEFAULT_TIMING.stableAfterMs,
    probeTimeScale: t.probeTimeScale ?? DEFAULT_TIMING.probeTimeScale,
    drainDelayMs: t.drainDelay ?? DEFAULT_TIMING.drainDelayMs,
    memoryReclaimAfterMs: t.memoryReclaimAfter ?? DEFAULT_TIMING.memoryReclaimAfterMs,
  };
  const auth: AgentAuth =
    v.auth.mode === 'iam'
      ? {
          mode: 'iam',
          ...(v.auth.region ? { region: v.auth.region } : {}),
          ...(identityDocument && identitySignature ? { identityDocument, identitySignature } : {}),
        }
      : {
          mode: 'token',
          ...(v.auth.token
            ? { token: v.auth.token, tokenSource: layer.sources['auth.token'] ?? 'auth.token' }
            : {}),
          ...(v.auth.tokenFile ? { tokenFile: v.auth.tokenFile } : {}),
        };
  return {
    url: v.url,
    group: v.group,
    namespace: v.namespace,
    ...(v.network ? { network: v.network } : {}),
    labels: v.labels,
    auth,
    ips: v.ip,
    ...(v.locality ? { locality: v.locality } : {}),
    imds: { enabled: v.imds.enabled, url: v.imds.url, timeoutMs: v.imds.timeout },
    logFormat: v.logFormat,
    debug: v.debug,
    ...(v.probeUser ? { probeUser: v.probeUser } : {}),
    timing,
    sidecar: toSidecarConfig(v.sidecar),
  };
}

/**
 * `ws://` carries the join token (or the SigV4-signed URL and the instance identity document)
 * in clear, and whoever sits in between can answer `describe` with a probe of its choosing,
 * an `exec` probe the agent then runs. Allowed to a loopback address (the local runtime, a
 * TLS-terminating sidecar on the VM itself), elsewhere only with `--insecure`.
 */
function clearTextProblem(url: string, insecure: boolean, source: string): string | undefined {
  const parsed = new URL(url);
  if (parsed.protocol !== 'ws:' || insecure || isLoopbackHost(parsed.hostname)) return undefined;
  return `${source} '${url}' is ws:// to ${parsed.hostname}, which is not a loopback address: the join token or signed request, the instance identity document and the probe the registrar sends would travel in clear; use wss://, or pass --insecure (REGISTRAR_AGENT_INSECURE=true) on a network you trust`;
}

function isLoopbackHost(hostname: string): boolean {
  if (hostname === 'localhost') return true;
  const address = parseIpAddress(hostname.replace(/^\[(.*)\]$/, '$1'));
  if (!address) return false;
  return address.family === 4 ? address.bytes[0] === 127 : address.text === '::1';
}

/** `registrar-agent --help`, derived from the settings table (agent/settings.ts). */
export const USAGE = agentUsage();
