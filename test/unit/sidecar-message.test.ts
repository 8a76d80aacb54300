import { describe, expect, it } from 'vitest';
import { buildBootstrap } from '../../lib/mesh-identity/bootstrap.ts';
import { readMeshSettings } from '../../lib/mesh-identity/mesh-settings.ts';
import {
  meshConfigProblems,
  readSidecarReply,
  type SidecarReply,
} from '../../lib/protocol/sidecar-message.ts';
import { createTestSigner } from '../fixtures/instance-identity-signer.ts';

/**
 * The agent writes istio-proxy's files (one sourced by a shell, one that names where the mesh
 * lives, /etc/hosts) from the registrar's `sidecar` answer; the attacker is whoever forges
 * or corrupts that answer. Every field is checked before anything is written, and a problem
 * names the field and the value (but never the token).
 */
// biome-ignore lint/suspicious/noExplicitAny: each case spoils some field deep inside the reply.
type Spoilable = any;

const PEM = createTestSigner('istio root CA stand-in').certificatePem;

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
    readMeshSettings({ REGISTRAR_MESH_ID: 'mesh1', REGISTRAR_MESH_ISTIOD_ADDRESS: '10.1.1.1' }),
    PEM,
  );
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
      "bootstrap.clusterEnv.$(reboot): is not a key Istio's VM bootstrap defines",
    ],
    [
      'a newline in a cluster.env value',
      (r) => {
        r.bootstrap.clusterEnv.POD_NAMESPACE = 'shop\nPATH=/tmp';
      },
      'bootstrap.clusterEnv.POD_NAMESPACE: must be a name of letters, digits, ".", "_" and "-" on one line, got \'shop\nPATH=/tmp\'',
    ],
    [
      'a value that is not text',
      (r) => {
        r.bootstrap.clusterEnv.POD_NAMESPACE = 7;
      },
      'bootstrap.clusterEnv.POD_NAMESPACE: must be a name of letters, digits, ".", "_" and "-" on one line, got 7',
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
      "bootstrap.meshConfig.defaultConfig.proxyMetadata.a b: is not a key Istio's VM bootstrap defines",
    ],
    [
      'a root certificate that is not PEM',
      (r) => {
        r.bootstrap.rootCert = 'hello';
      },
      "bootstrap.rootCert: must be PEM certificates (base64 between BEGIN/END CERTIFICATE lines, nothing else), got 'hello'",
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

/**
 * A registrar, or whoever answers on its URL, that wants root on the VM: istio-start.sh
 * sources cluster.env as root with `set -a`, pastes ISTIO_SERVICE and ISTIO_NAMESPACE into a
 * `su -c` command line, and istio-proxy trusts the root certificate and resolves names by the
 * hosts file. Each hostile field alone makes the whole answer refused (nothing is written).
 */
describe('the sidecar answer holds exactly what Istio defines', () => {
  it.each<[string, (r: Spoilable) => void, string]>([
    ...['BASH_ENV', 'LD_PRELOAD', 'PATH', 'ISTIO_BIN_BASE', 'EXEC_USER', 'ISTIO_AGENT_FLAGS'].map(
      (key): [string, (r: Spoilable) => void, string] => [
        `${key} in cluster.env`,
        (r) => {
          r.bootstrap.clusterEnv[key] = '/tmp/x';
        },
        `bootstrap.clusterEnv.${key}: is not a key Istio's VM bootstrap defines`,
      ],
    ),
    [
      'TPROXY mode, which makes istio-start.sh run the proxy as root',
      (r) => {
        r.bootstrap.clusterEnv.ISTIO_INBOUND_INTERCEPTION_MODE = 'TPROXY';
      },
      "bootstrap.clusterEnv.ISTIO_INBOUND_INTERCEPTION_MODE: is not a key Istio's VM bootstrap defines",
    ],
    [
      'an object method name as a key',
      (r) => {
        r.bootstrap.clusterEnv.constructor = 'x';
      },
      "bootstrap.clusterEnv.constructor: is not a key Istio's VM bootstrap defines",
    ],
    [
      'LD_PRELOAD in the proxy metadata',
      (r) => {
        r.bootstrap.meshConfig.defaultConfig.proxyMetadata.LD_PRELOAD = '/tmp/x.so';
      },
      "bootstrap.meshConfig.defaultConfig.proxyMetadata.LD_PRELOAD: is not a key Istio's VM bootstrap defines",
    ],
    [
      'a command in ISTIO_SERVICE (pasted into su -c)',
      (r) => {
        r.bootstrap.clusterEnv.ISTIO_SERVICE = 'web.shop;reboot';
      },
      'bootstrap.clusterEnv.ISTIO_SERVICE: must be a name of letters, digits',
    ],
    [
      'a command substitution in ISTIO_NAMESPACE',
      (r) => {
        r.bootstrap.clusterEnv.ISTIO_NAMESPACE = '$(id)';
      },
      'bootstrap.clusterEnv.ISTIO_NAMESPACE: must be a name of letters, digits',
    ],
    [
      'iptables words in the inbound ports',
      (r) => {
        r.bootstrap.clusterEnv.ISTIO_INBOUND_PORTS = '8080 -j ACCEPT';
      },
      "bootstrap.clusterEnv.ISTIO_INBOUND_PORTS: must be '*' or a list of ports on one line, got '8080 -j ACCEPT'",
    ],
    [
      'a port out of range in the excluded ports',
      (r) => {
        r.bootstrap.clusterEnv.ISTIO_LOCAL_EXCLUDE_PORTS = '22,70000';
      },
      'bootstrap.clusterEnv.ISTIO_LOCAL_EXCLUDE_PORTS: must be a list of ports',
    ],
    [
      'a service CIDR that is not one',
      (r) => {
        r.bootstrap.clusterEnv.ISTIO_SERVICE_CIDR = '10.0.0.0/33';
      },
      "bootstrap.clusterEnv.ISTIO_SERVICE_CIDR: must be '*' or a list of CIDRs on one line, got '10.0.0.0/33'",
    ],
    [
      'labels that are not a JSON object of text',
      (r) => {
        r.bootstrap.clusterEnv.ISTIO_METAJSON_LABELS = '{"app":1}';
      },
      'bootstrap.clusterEnv.ISTIO_METAJSON_LABELS: must be a JSON object of text labels',
    ],
    [
      'DNS capture that is neither true nor false',
      (r) => {
        r.bootstrap.clusterEnv.ISTIO_META_DNS_CAPTURE = 'yes';
      },
      "bootstrap.clusterEnv.ISTIO_META_DNS_CAPTURE: must be 'true' or 'false' on one line, got 'yes'",
    ],
    [
      'an extra hosts line for another name',
      (r) => {
        r.bootstrap.hosts.push({ address: '10.9.9.9', hostnames: ['login.bank.example'] });
      },
      "bootstrap.hosts: must be at most one line, for the discovery host 'istiod.istio-system.svc'",
    ],
    [
      'the one hosts line naming another host too',
      (r) => {
        r.bootstrap.hosts[0].hostnames.push('login.bank.example');
      },
      "bootstrap.hosts.0.hostnames: must be exactly ['istiod.istio-system.svc'], the discovery host",
    ],
    [
      'a hosts line for a name that is not the discovery host',
      (r) => {
        r.bootstrap.hosts[0].hostnames = ['localhost'];
      },
      'bootstrap.hosts.0.hostnames: must be exactly [\'istiod.istio-system.svc\'], the discovery host, got ["localhost"]',
    ],
    [
      'a hosts line when the discovery address is an IP',
      (r) => {
        r.bootstrap.meshConfig.defaultConfig.discoveryAddress = '10.1.1.1:15012';
      },
      "bootstrap.hosts: must be at most one line, for the discovery host '10.1.1.1' (and none when it is an address), got 1",
    ],
    [
      'a discovery port out of range',
      (r) => {
        r.bootstrap.meshConfig.defaultConfig.discoveryAddress = 'istiod.istio-system.svc:99999';
      },
      "bootstrap.meshConfig.defaultConfig.discoveryAddress: must be host:port, got 'istiod.istio-system.svc:99999'",
    ],
    [
      'junk between the PEM markers',
      (r) => {
        r.bootstrap.rootCert = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
      },
      'bootstrap.rootCert: certificate 1 is not an X.509 certificate',
    ],
    [
      'shell text between the PEM markers',
      (r) => {
        r.bootstrap.rootCert =
          '-----BEGIN CERTIFICATE-----\n$(reboot)\n-----END CERTIFICATE-----\n';
      },
      'bootstrap.rootCert: must be PEM certificates (base64 between BEGIN/END CERTIFICATE lines, nothing else)',
    ],
    [
      'text between two certificates',
      (r) => {
        r.bootstrap.rootCert = `${PEM}touch /tmp/pwned\n${PEM}`;
      },
      'bootstrap.rootCert: must be PEM certificates',
    ],
    [
      'a private key after the certificate',
      (r) => {
        r.bootstrap.rootCert = `${PEM}-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n`;
      },
      'bootstrap.rootCert: must be PEM certificates',
    ],
  ])('refuses %s', (_, spoil, problem) => {
    expect(problemsOf(spoil).join('\n')).toContain(problem);
  });

  it('accepts two certificates (a root and an intermediate), and every key the registrar builds', () => {
    const twoCertificates = (r: Spoilable) => {
      r.bootstrap.rootCert = `${PEM}\n${PEM}`;
    };
    expect(problemsOf(twoCertificates)).toEqual([]);
    expect(problemsOf(() => {})).toEqual([]);
  });
});
