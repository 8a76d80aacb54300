import { describe, expect, it } from 'vitest';
import { buildBootstrap } from '../../lib/mesh-identity/bootstrap.ts';
import { readMeshSettings } from '../../lib/mesh-identity/mesh-settings.ts';
import {
  meshConfigProblems,
  readSidecarReply,
  type SidecarReply,
} from '../../lib/protocol/sidecar-message.ts';

/**
 * The agent writes istio-proxy's files (one sourced by a shell, one that names where the mesh
 * lives, /etc/hosts) from the registrar's `sidecar` answer; the attacker is whoever forges
 * or corrupts that answer. Every field is checked before anything is written, and a problem
 * names the field and the value (but never the token).
 */
// biome-ignore lint/suspicious/noExplicitAny: each case spoils some field deep inside the reply.
type Spoilable = any;

const PEM = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';

function reply(): SidecarReply {
  const bootstrap = buildBootstrap(
    {
      namespace: 'shop',
      group: 'web',
      serviceAccount: 'web',
      labels: {},
      groupLabels: {},
      ports: {},
      network: 'vpc-1',
    },
    readMeshSettings({ REGISTRAR_MESH_ID: 'mesh1' }),
    PEM,
  );
  bootstrap.hosts = [{ address: '10.1.1.1', hostnames: ['istiod.istio-system.svc'] }];
  return {
    action: 'sidecar',
    ok: true,
    entry: 'shop/web-10-0-0-1',
    serviceAccount: 'web',
    bootstrap,
    token: {
      value: 'aaa.bbb.ccc',
      audience: 'istio-ca',
      expiresAt: '2030-01-01T01:00:00.000Z',
      expiresInSeconds: 3600,
    },
  };
}

/** The problems of a reply changed by `spoil`, as `path: message`. */
function problemsOf(spoil: (r: Spoilable) => void): string[] {
  const value = structuredClone(reply()) as Spoilable;
  spoil(value);
  const read = readSidecarReply(value);
  return read.ok ? [] : read.problems.map((p) => `${p.path}: ${p.message}`);
}

describe('the sidecar answer, checked before anything is written', () => {
  it('accepts what the registrar builds, and a field a newer registrar adds', () => {
    const good = reply();
    expect(readSidecarReply(good)).toEqual({ ok: true, value: good });
    expect(readSidecarReply({ ...good, addedLater: 1 }).ok).toBe(true);
    expect(
      readSidecarReply({ ...good, token: { ...good.token, expiresAt: '2030-01-01T01:00:00Z' } }).ok,
    ).toBe(true);
  });

  it.each<[string, (r: Spoilable) => void, string]>([
    [
      'a shell command as a cluster.env key',
      (r) => {
        r.bootstrap.clusterEnv['$(reboot)'] = 'x';
      },
      "bootstrap.clusterEnv.$(reboot): must be an environment variable name, got '$(reboot)'",
    ],
    [
      'a newline in a cluster.env value',
      (r) => {
        r.bootstrap.clusterEnv.POD_NAMESPACE = 'shop\nPATH=/tmp';
      },
      "bootstrap.clusterEnv.POD_NAMESPACE: must be one line without control characters, got 'shop\nPATH=/tmp'",
    ],
    [
      'a value that is not text',
      (r) => {
        r.bootstrap.clusterEnv.POD_NAMESPACE = 7;
      },
      'bootstrap.clusterEnv.POD_NAMESPACE: must be one line without control characters, got 7',
    ],
    [
      'a discovery address without a port',
      (r) => {
        r.bootstrap.meshConfig.defaultConfig.discoveryAddress = 'evil.example';
      },
      "bootstrap.meshConfig.defaultConfig.discoveryAddress: must be host:port, got 'evil.example'",
    ],
    [
      'an unknown mesh config key',
      (r) => {
        r.bootstrap.meshConfig.defaultConfig.readinessProbe = {};
      },
      'bootstrap.meshConfig.defaultConfig.readinessProbe: is not an allowed field',
    ],
    [
      'an empty mesh id',
      (r) => {
        r.bootstrap.meshConfig.defaultConfig.meshId = '';
      },
      "bootstrap.meshConfig.defaultConfig.meshId: must be one non-empty line, got ''",
    ],
    [
      'a bad proxyMetadata key',
      (r) => {
        r.bootstrap.meshConfig.defaultConfig.proxyMetadata['a b'] = 'x';
      },
      "bootstrap.meshConfig.defaultConfig.proxyMetadata.a b: must be an environment variable name, got 'a b'",
    ],
    [
      'a root certificate that is not PEM',
      (r) => {
        r.bootstrap.rootCert = 'hello';
      },
      "bootstrap.rootCert: must be PEM, got 'hello'",
    ],
    [
      'a hosts address that is not an IP',
      (r) => {
        r.bootstrap.hosts[0].address = '10.1.1';
      },
      "bootstrap.hosts.0.address: must be an IPv4 or IPv6 address, got '10.1.1'",
    ],
    [
      'a hosts line without a name',
      (r) => {
        r.bootstrap.hosts[0].hostnames = [];
      },
      'bootstrap.hosts.0.hostnames: must have at least 1 item(s), got none',
    ],
    [
      'a host name with a space',
      (r) => {
        r.bootstrap.hosts[0].hostnames = ['a b'];
      },
      "bootstrap.hosts.0.hostnames.0: must be a host name, got 'a b'",
    ],
    [
      'an extra bootstrap file',
      (r) => {
        r.bootstrap.sudoers = 'ALL';
      },
      'bootstrap.sudoers: is not an allowed field',
    ],
    [
      'hosts that are not a list',
      (r) => {
        r.bootstrap.hosts = 'x';
      },
      "bootstrap.hosts: must be a list, got 'x'",
    ],
    [
      'a token that is not a JWT',
      (r) => {
        r.token.value = 'a b';
      },
      'token.value: must be a JWT',
    ],
    [
      'an empty audience',
      (r) => {
        r.token.audience = '';
      },
      "token.audience: must be a non-empty string, got ''",
    ],
    [
      'an expiry with an offset',
      (r) => {
        r.token.expiresAt = '2030-01-01T01:00:00+02:00';
      },
      "token.expiresAt: must be an RFC 3339 time in UTC such as 2026-01-01T00:00:00Z, got '2030-01-01T01:00:00+02:00'",
    ],
    [
      'an impossible expiry',
      (r) => {
        r.token.expiresAt = '2030-02-31T01:00:00Z';
      },
      'token.expiresAt: must be an RFC 3339 time in UTC',
    ],
    [
      'a lifetime that is not whole',
      (r) => {
        r.token.expiresInSeconds = 1.5;
      },
      'token.expiresInSeconds: must be a positive whole number, got 1.5',
    ],
    [
      'a zero lifetime',
      (r) => {
        r.token.expiresInSeconds = 0;
      },
      'token.expiresInSeconds: must be a positive whole number, got 0',
    ],
    [
      'another action',
      (r) => {
        r.action = 'describe';
      },
      'action: must be "sidecar", got describe',
    ],
    [
      'a refusal shape',
      (r) => {
        r.ok = false;
      },
      'ok: must be true, got false',
    ],
    [
      'an entry that is not text',
      (r) => {
        r.entry = 5;
      },
      'entry: must be a string, got 5',
    ],
    [
      'no bootstrap at all',
      (r) => {
        r.bootstrap = null;
      },
      'bootstrap: must be a mapping, got null',
    ],
  ])('refuses %s', (_, spoil, problem) => {
    expect(problemsOf(spoil).join('\n')).toContain(problem);
  });

  it('never echoes the token value', () => {
    const problems = problemsOf((r) => {
      r.token.value = 'secret token value';
    });
    expect(problems).toEqual(['token.value: must be a JWT']);
  });

  it('reports every problem, not only the first', () => {
    const problems = problemsOf((r) => {
      r.bootstrap.rootCert = 'x';
      r.token.audience = '';
    });
    expect(problems).toHaveLength(2);
  });

  it('refuses a mesh config that is not a mapping', () => {
    expect(meshConfigProblems('defaultConfig: {}')).toEqual([
      { path: '', message: "must be a mapping, got 'defaultConfig: {}'" },
    ]);
  });
});
