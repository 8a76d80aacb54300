import { describe, expect, it } from 'vitest';
import { AgentConfigError, loadAgentConfig } from '../../agent/config.ts';
import {
  loadConfig as load,
  refusal,
  TOKEN_ENV,
  yamlFiles,
} from '../fixtures/agent-config-files.ts';

const BASE = [
  '--url',
  'wss://abc123.execute-api.eu-west-1.amazonaws.com/prod',
  '--group',
  'web',
  '--namespace',
  'shop',
];

const yamlFile = yamlFiles('agent-config-');

describe('agent configuration', () => {
  it('reads flags with the documented defaults', () => {
    const config = load([
      ...BASE,
      '--label',
      'app=web',
      '--label',
      'tier=front',
      '--ip',
      '10.0.0.5',
    ]);
    expect(config).toMatchObject({
      group: 'web',
      namespace: 'shop',
      labels: { app: 'web', tier: 'front' },
      ips: ['10.0.0.5'],
      auth: { mode: 'token', token: 'wrt.x.y' },
      logFormat: 'text',
      imds: { enabled: true, url: 'http://169.254.169.254', timeoutMs: 1_000 },
    });
    expect(config.timing).toMatchObject({
      pingIntervalMs: 300_000,
      maxConnectionAgeMs: 7_200_000,
      backoffCapMs: 60_000,
    });
  });

  it('reads REGISTRAR_AGENT_* variables, with comma-separated lists', () => {
    const config = load([], {
      REGISTRAR_AGENT_URL: 'ws://127.0.0.1:8080/local',
      REGISTRAR_AGENT_GROUP: 'web',
      REGISTRAR_AGENT_NAMESPACE: 'shop',
      REGISTRAR_AGENT_LABELS: 'app=web, tier=front',
      REGISTRAR_AGENT_IP: '10.0.0.5,fd00::5',
      REGISTRAR_AGENT_TOKEN_FILE: '/etc/registrar-agent/token',
      REGISTRAR_AGENT_LOG_FORMAT: 'json',
    });
    expect(config).toMatchObject({
      labels: { app: 'web', tier: 'front' },
      ips: ['10.0.0.5', 'fd00::5'],
      auth: { mode: 'token', tokenFile: '/etc/registrar-agent/token' },
      logFormat: 'json',
    });
  });

  it('layers the YAML file under the environment and the environment under flags', () => {
    const file = yamlFile(`url: ws://file.example/local
insecure: true
group: from-file
namespace: shop
labels: { app: web, tier: back }
auth: { mode: iam, region: eu-west-1 }
timing: { pingInterval: 1m }
`);
    const config = load(['--config', file, '--group', 'from-flag', '--label', 'tier=front'], {
      REGISTRAR_AGENT_GROUP: 'from-env',
      REGISTRAR_AGENT_URL: 'ws://env.example/local',
    });
    expect(config).toMatchObject({
      url: 'ws://env.example/local',
      group: 'from-flag',
      labels: { tier: 'front' },
      auth: { mode: 'iam', region: 'eu-west-1' },
    });
    expect(config.timing.pingIntervalMs).toBe(60_000);
  });

  it('names the flag and the value when a setting is invalid', () => {
    expect(() => load([...BASE, '--ip', '10.0.0.300'])).toThrow(
      "ip.0 (from --ip): '10.0.0.300' is not an IPv4 or IPv6 address",
    );
    expect(() => load([...BASE, '--log-format', 'xml'])).toThrow(
      "logFormat (from --log-format): must be 'text' or 'json', got 'xml'",
    );
    expect(() => load([...BASE, '--label', 'app'])).toThrow(
      "label 'app' must be written key=value",
    );
    expect(() => load([...BASE, '--ping-interval', '0s'])).toThrow(
      'timing.pingInterval (from --ping-interval): must be a positive duration',
    );
  });

  it('names the environment variable when a setting from it is invalid', () => {
    expect(() =>
      load(['--group', 'web', '--namespace', 'shop'], {
        ...TOKEN_ENV,
        REGISTRAR_AGENT_URL: 'https://x.example',
      }),
    ).toThrow('url (from REGISTRAR_AGENT_URL): must be a ws:// or wss:// URL');
  });

  it('says what is missing', () => {
    expect(() => load(['--group', 'web', '--namespace', 'shop'])).toThrow(
      'url: is required: the registrar WebSocket URL',
    );
  });

  it('refuses token mode without a token', () => {
    expect(() => load(BASE, {})).toThrow(
      new AgentConfigError(
        'token mode needs a join token: set REGISTRAR_AGENT_TOKEN or --token-file <path> (create one with registrar token create), or use --auth iam',
      ),
    );
  });

  it('accepts IAM mode without a token', () => {
    expect(load([...BASE, '--auth', 'iam'], {}).auth).toEqual({ mode: 'iam' });
  });

  it('refuses an unknown flag', () => {
    expect(() => load([...BASE, '--tokn', 'x'])).toThrow(
      /Unknown option '--tokn'.*see registrar-agent --help/,
    );
  });

  it('names a config file key no setting has, with the closest one', () => {
    const file = yamlFile('url: wss://registrar.example/v1\ngroop: web\nnamespace: shop\n');
    expect(() => load(['--config', file])).toThrow(
      `config file ${file}: unknown setting 'groop' (did you mean 'group'?)`,
    );
    const nested = yamlFile(
      'url: wss://registrar.example/v1\ngroup: web\nnamespace: shop\ntiming: {pingIntervall: 4m}\nflavour: x\n',
    );
    expect(() => load(['--config', nested])).toThrow(
      `config file ${nested}: unknown setting 'timing.pingIntervall' (did you mean 'timing.pingInterval'?); unknown setting 'flavour'`,
    );
  });

  it('reports a config file that is not YAML', () => {
    expect(() => load(['--config', yamlFile('url: [unclosed')])).toThrow(/is not valid YAML/);
  });

  it('refuses --no-imds without --ip as a configuration error naming both', () => {
    expect(() => load([...BASE, '--no-imds'])).toThrow(
      new AgentConfigError(
        "--no-imds needs --ip <address> (or REGISTRAR_AGENT_IP): without the instance metadata service the agent cannot discover this VM's address",
      ),
    );
    expect(() => load(BASE, { ...TOKEN_ENV, REGISTRAR_AGENT_IMDS: 'false' })).toThrow(
      /^REGISTRAR_AGENT_IMDS needs --ip/,
    );
  });

  it('disables IMDS with --no-imds', () => {
    expect(load([...BASE, '--no-imds', '--ip', '10.0.0.5']).imds.enabled).toBe(false);
  });

  it('answers --help without validating anything', () => {
    expect(loadAgentConfig(['--help'], {})).toBe('help');
  });
});

/**
 * The attacker: a man in the middle of a ws:// connection reads the join token (or replays the
 * signed request and the identity document) and answers `describe` with an `exec` probe.
 */
describe('agent configuration: ws:// only to loopback unless --insecure', () => {
  const over = (url: string, extra: string[] = [], env: Record<string, string> = TOKEN_ENV) =>
    load(['--url', url, '--group', 'web', '--namespace', 'shop', ...extra], env);

  it.each([
    ['ws://10.0.0.5:8080', '10.0.0.5'],
    ['ws://registrar.example/v1', 'registrar.example'],
    ['ws://[fd00::5]:8080', '[fd00::5]'],
  ])('refuses %s, naming --insecure and the variable', (url, host) => {
    const message = refusal(() => over(url));
    expect(message).toContain(
      `--url '${url}' is ws:// to ${host}, which is not a loopback address`,
    );
    expect(message).toContain('use wss://, or pass --insecure (REGISTRAR_AGENT_INSECURE=true)');
  });

  it('names the variable the URL came from', () => {
    const message = refusal(() =>
      load(['--group', 'web', '--namespace', 'shop'], {
        ...TOKEN_ENV,
        REGISTRAR_AGENT_URL: 'ws://10.0.0.5/',
      }),
    );
    expect(message).toContain("REGISTRAR_AGENT_URL 'ws://10.0.0.5/' is ws://");
  });

  it.each([
    ['ws://127.0.0.1:8080'],
    ['ws://127.3.2.1:8080'],
    ['ws://localhost:8080'],
    ['ws://[::1]:8080'],
    ['wss://10.0.0.5:8443'],
    ['wss://abc123.execute-api.eu-west-1.amazonaws.com/v1'],
  ])('accepts %s without --insecure', (url) => {
    expect(over(url).url).toBe(url);
  });

  it('accepts ws:// to another host with --insecure or REGISTRAR_AGENT_INSECURE=true', () => {
    expect(over('ws://10.0.0.5:8080', ['--insecure']).url).toBe('ws://10.0.0.5:8080');
    expect(
      over('ws://10.0.0.5:8080', [], { ...TOKEN_ENV, REGISTRAR_AGENT_INSECURE: 'true' }).url,
    ).toBe('ws://10.0.0.5:8080');
  });
});
