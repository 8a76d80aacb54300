import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentConfig } from '../../agent/config.ts';
import { DEFAULT_TIMING } from '../../agent/config.ts';
import { DiscoveryError, discover, INSTANCE_ID_LABEL } from '../../agent/discovery.ts';
import { discoverInstance, ImdsUnavailableError } from '../../agent/imds.ts';
import { memoryLogger } from '../../agent/logger.ts';
import { type ImdsStandIn, startImdsStandIn } from '../fixtures/agent-imds-stand-in.ts';
import { startSilentPort } from '../fixtures/silent-port.ts';

// A stand-in for IMDS (see the fixture): these tests do not run on EC2.
const INSTANCE = {
  'instance-id': 'i-0abc123def4567890',
  'local-ipv4': '10.0.1.17',
  'placement/availability-zone': 'eu-west-1b',
  'placement/region': 'eu-west-1',
};

function config(overrides: Partial<AgentConfig>): AgentConfig {
  return {
    url: 'ws://127.0.0.1:1/local',
    group: 'web',
    namespace: 'shop',
    labels: {},
    auth: { mode: 'token', token: 't' },
    ips: [],
    imds: { enabled: true, url: 'http://127.0.0.1:1', timeoutMs: 300 },
    logFormat: 'text',
    debug: false,
    timing: DEFAULT_TIMING,
    ...overrides,
  };
}

describe('IMDSv2 discovery', () => {
  let imds: ImdsStandIn;
  beforeAll(async () => {
    imds = await startImdsStandIn({ ...INSTANCE });
  });
  afterAll(() => imds.close());

  it('reads the instance with a session token', async () => {
    const identity = await discoverInstance({ baseUrl: imds.url, timeoutMs: 1_000 });
    expect(identity).toEqual({
      instanceId: 'i-0abc123def4567890',
      ipv4: '10.0.1.17',
      availabilityZone: 'eu-west-1b',
      region: 'eu-west-1',
    });
    expect(imds.tokenRequests).toBeGreaterThan(0);
  });

  it('adds the IPv6 address when the instance has one', async () => {
    imds.data.ipv6 = '2a05:d018::17';
    try {
      expect((await discoverInstance({ baseUrl: imds.url, timeoutMs: 1_000 })).ipv6).toBe(
        '2a05:d018::17',
      );
    } finally {
      delete imds.data.ipv6;
    }
  });

  it('turns the placement into locality region/zone and the instance ID into a label', async () => {
    const found = await discover(
      config({ imds: { enabled: true, url: imds.url, timeoutMs: 1_000 } }),
      memoryLogger(),
    );
    expect(found).toEqual({
      ips: ['10.0.1.17'],
      locality: 'eu-west-1/eu-west-1b',
      labels: { [INSTANCE_ID_LABEL]: 'i-0abc123def4567890' },
      region: 'eu-west-1',
    });
  });

  it('lets --ip and --locality override what IMDS says', async () => {
    const found = await discover(
      config({
        ips: ['192.168.0.9'],
        locality: 'r/z',
        imds: { enabled: true, url: imds.url, timeoutMs: 1_000 },
      }),
      memoryLogger(),
    );
    expect(found).toMatchObject({ ips: ['192.168.0.9'], locality: 'r/z' });
  });
});

describe('discovery off EC2', () => {
  it('fails fast with a clear message when IMDS does not answer and no --ip was given', async () => {
    // A port that accepts connections and never answers: what an unreachable IMDS looks like.
    const silent = await startSilentPort();
    const url = `http://127.0.0.1:${silent.port}`;
    try {
      await expect(discoverInstance({ baseUrl: url, timeoutMs: 200 })).rejects.toBeInstanceOf(
        ImdsUnavailableError,
      );
      await expect(
        discover(config({ imds: { enabled: true, url, timeoutMs: 200 } }), memoryLogger()),
      ).rejects.toThrow(
        new DiscoveryError(
          `cannot discover this VM's address: the EC2 instance metadata service at ${url} did not answer within 200 ms (timed out); not running on EC2? pass --ip <address> (and --locality <region/zone>) to run elsewhere`,
        ),
      );
    } finally {
      await silent.close();
    }
  });

  it('carries on with --ip when IMDS is unreachable', async () => {
    const found = await discover(config({ ips: ['10.9.9.9'] }), memoryLogger());
    expect(found).toEqual({ ips: ['10.9.9.9'], labels: {} });
  });

  it('does not ask IMDS at all with --no-imds', async () => {
    let asked = false;
    await discover(
      config({
        ips: ['10.9.9.9'],
        imds: { enabled: false, url: 'http://127.0.0.1:1', timeoutMs: 200 },
      }),
      memoryLogger(),
      async () => {
        asked = true;
        throw new Error('unexpected');
      },
    );
    expect(asked).toBe(false);
  });
});
