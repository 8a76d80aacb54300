import { describe, expect, it } from 'vitest';
import {
  loadConfig as load,
  refusal,
  TOKEN_ENV,
  yamlFiles,
} from '../fixtures/agent-config-files.ts';

/**
 * Every setting refuses a bad value with its key, where it came from and the value, and
 * accepts a good one: the checks are plain functions (agent/config-fields.ts), so each
 * refusal is held here rather than trusted to a validation library.
 */
const BASE = ['--url', 'wss://registrar.example/v1', '--group', 'web', '--namespace', 'shop'];

const yamlFile = yamlFiles('agent-config-refusals-');

describe('agent settings refuse a bad value, naming the key, the source and the value', () => {
  it.each([
    [['--group', 'Web_1'], "group (from --group): 'Web_1' is not a valid WorkloadGroup name"],
    [['--namespace', 'Shop'], "namespace (from --namespace): 'Shop' is not a valid namespace name"],
    [['--network', ''], "network (from --network): must be a non-empty string, got ''"],
    [
      ['--locality', 'a/b/c/d'],
      "locality (from --locality): 'a/b/c/d' must be region[/zone[/subzone]]",
    ],
    [['--auth', 'kerberos'], "auth.mode (from --auth): must be 'token' or 'iam', got 'kerberos'"],
    [
      ['--label', 'bad key=1'],
      "labels (from --label): label key 'bad key' is not a valid Kubernetes label key",
    ],
    [['--label', 'app=-web'], "label value '-web' of 'app' is not a valid label value"],
    [
      ['--imds-url', 'not a url'],
      "imds.url (from --imds-url): must be a URL such as http://169.254.169.254, got 'not a url'",
    ],
    [
      ['--imds-timeout', '0s'],
      "imds.timeout (from --imds-timeout): must be a positive duration such as 500ms, 10s or 5m, got '0s'",
    ],
    [
      ['--probe-time-scale', '2'],
      "timing.probeTimeScale (from --probe-time-scale): must be a number above 0 and at most 1, got '2'",
    ],
    [['--probe-time-scale', 'fast'], "must be a number above 0 and at most 1, got 'fast'"],
    [
      ['--memory-reclaim-after', 'soon'],
      "timing.memoryReclaimAfter (from --memory-reclaim-after): must be 0 (never) or a duration such as 30s or 5m, got 'soon'",
    ],
    [
      ['--sidecar-prefix', 'relative/dir'],
      "sidecar.prefix (from --sidecar-prefix): must be an absolute path, got 'relative/dir'",
    ],
    [
      ['--sidecar-token', 'token'],
      "sidecar.token (from --sidecar-token): must be an absolute path, got 'token'",
    ],
    [
      ['--sidecar-owner', 'Not A User'],
      "sidecar.owner (from --sidecar-owner): must be a user name, a uid or uid:gid, got 'Not A User'",
    ],
    [
      ['--sidecar-on-change', ''],
      "sidecar.onChange (from --sidecar-on-change): must be a non-empty command, got ''",
    ],
  ])('%j', (extra, message) => {
    expect(refusal(() => load([...BASE, ...extra]))).toContain(message);
  });

  it.each([
    [
      'REGISTRAR_AGENT_INSECURE',
      'maybe',
      "insecure (from REGISTRAR_AGENT_INSECURE): must be true or false, got 'maybe'",
    ],
    [
      'REGISTRAR_AGENT_DEBUG',
      'loud',
      "debug (from REGISTRAR_AGENT_DEBUG): must be true or false, got 'loud'",
    ],
    [
      'REGISTRAR_AGENT_SIDECAR',
      'sure',
      "sidecar.enabled (from REGISTRAR_AGENT_SIDECAR): must be true or false, got 'sure'",
    ],
    [
      'REGISTRAR_AGENT_IMDS',
      'off',
      "imds.enabled (from REGISTRAR_AGENT_IMDS): must be true or false, got 'off'",
    ],
  ])('%s=%s', (name, value, message) => {
    expect(refusal(() => load(BASE, { ...TOKEN_ENV, [name]: value }))).toContain(message);
  });

  it('names every bad setting at once, in the order of the settings', () => {
    const message = refusal(() =>
      load([...BASE, '--group', 'A', '--ip', 'x', '--log-format', 'xml']),
    );
    expect(message).toBe(
      "invalid agent configuration: group (from --group): 'A' is not a valid WorkloadGroup name (lower case letters, digits, '-' and '.'); ip.0 (from --ip): 'x' is not an IPv4 or IPv6 address; logFormat (from --log-format): must be 'text' or 'json', got 'xml'",
    );
  });

  it('refuses values of the wrong type in the config file, naming the file and the value', () => {
    const file = yamlFile(
      'url: wss://registrar.example/v1\ngroup: 5\nnamespace: shop\nlabels: [1, 2]\ntiming: 30s\nimds: {timeout: true}\nlogFormat: [json]\ninsecure: 3\n',
    );
    const message = refusal(() => load(['--config', file]));
    expect(message).toContain(`group (from ${file}): '5' is not a valid WorkloadGroup name`);
    expect(message).toContain(`labels (from ${file}): label '1' must be written key=value`);
    expect(message).toContain(`timing (from ${file}): must be a mapping, got '30s'`);
    expect(message).toContain(
      `imds.timeout (from ${file}): must be a positive duration such as 500ms, 10s or 5m, got true`,
    );
    expect(message).toContain(`logFormat (from ${file}): must be 'text' or 'json', got ["json"]`);
    expect(message).toContain(`insecure (from ${file}): must be true or false, got 3`);
  });

  it('refuses a label value that is not text, and a group that is missing', () => {
    const file = yamlFile(
      'url: wss://registrar.example/v1\nnamespace: shop\nlabels: {app: {x: 1}}\n',
    );
    const message = refusal(() => load(['--config', file]));
    expect(message).toContain('group: is required: the WorkloadGroup');
    expect(message).toContain(`label value {"x":1} of 'app' is not a valid label value`);
  });

  it('never echoes a join token given in the wrong shape', () => {
    const file = yamlFile(
      'url: wss://registrar.example/v1\ngroup: web\nnamespace: shop\nauth: {token: 918273645546372819}\n',
    );
    const message = refusal(() => load(['--config', file], {}));
    expect(message).toContain(`auth.token (from ${file}): must be a non-empty string`);
    expect(message).not.toContain('9182736455');
  });
});

describe('agent settings accept good values', () => {
  it('reads each checked setting', () => {
    const file = yamlFile(
      [
        'url: wss://registrar.example/v1',
        'group: web.v2',
        'namespace: shop',
        'network: vpc-1',
        'locality: eu-west-1/eu-west-1a/rack-3',
        'labels: {app: web, replicas: 3, canary: false, example.com/tier: ""}',
        'imds: {url: "http://127.0.0.1:9", timeout: 250ms}',
        'timing: {pingInterval: 60000, probeTimeScale: 0.5, drainDelay: 0, memoryReclaimAfter: 0}',
        'sidecar: {enabled: true, prefix: /srv/vm, owner: "1337:1337", onChange: "systemctl restart istio"}',
      ].join('\n'),
    );
    const config = load(['--config', file]);
    expect(config).toMatchObject({
      group: 'web.v2',
      network: 'vpc-1',
      locality: 'eu-west-1/eu-west-1a/rack-3',
      labels: { app: 'web', replicas: '3', canary: 'false', 'example.com/tier': '' },
      imds: { enabled: true, url: 'http://127.0.0.1:9', timeoutMs: 250 },
      sidecar: {
        enabled: true,
        prefix: '/srv/vm',
        owner: '1337:1337',
        onChange: 'systemctl restart istio',
      },
    });
    expect(config.timing).toMatchObject({
      pingIntervalMs: 60_000,
      probeTimeScale: 0.5,
      drainDelayMs: 0,
      memoryReclaimAfterMs: 0,
    });
  });
});
