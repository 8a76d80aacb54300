import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { describe, expect, it } from 'vitest';
import { AuthSetupError, createAuthenticator, iamAuthenticator } from '../../agent/auth.ts';
import { systemClock } from '../../agent/clock.ts';
import { buildConnectUrl } from '../../agent/connect-url.ts';
import { openLink, RefusedError } from '../../agent/connection.ts';
import { presignConnectUrl, regionFromUrl } from '../../agent/sigv4.ts';
import { NodeSha256 } from '../../lib/aws/node-sha256.ts';

const CREDENTIALS = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  sessionToken: 'session-token-example',
};
const NOW = new Date('2030-01-01T00:00:00Z');
const PARAMS = {
  group: 'web',
  namespace: 'shop',
  ips: ['10.0.1.17', 'fd00::17'],
  locality: 'eu-west-1/eu-west-1b',
  labels: { app: 'web', 'registrar.io/instance-id': 'i-0abc' },
};

/**
 * Verifies a received request the way API Gateway does: recompute the signature with the
 * SDK's own signer from what arrived (host header, path, every query parameter but the
 * signature) and the signing time the request claims, and compare.
 */
async function verify(host: string, target: string, region: string): Promise<boolean> {
  const url = new URL(target, `http://${host}`);
  const presented = url.searchParams.get('X-Amz-Signature');
  const amzDate = url.searchParams.get('X-Amz-Date') ?? '';
  const signingDate = new Date(
    amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'),
  );
  const query: Record<string, string | string[]> = {};
  for (const key of new Set(url.searchParams.keys())) {
    if (key.startsWith('X-Amz-')) continue;
    const values = url.searchParams.getAll(key);
    query[key] = values.length === 1 ? (values[0] as string) : values;
  }
  const signer = new SignatureV4({
    credentials: CREDENTIALS,
    region,
    service: 'execute-api',
    sha256: NodeSha256,
  });
  const expected = await signer.presign(
    new HttpRequest({
      method: 'GET',
      protocol: 'https:',
      hostname: url.hostname,
      path: url.pathname,
      query,
      headers: { host },
    }),
    { signingDate, expiresIn: Number(url.searchParams.get('X-Amz-Expires')) },
  );
  return presented !== null && expected.query?.['X-Amz-Signature'] === presented;
}

describe('IAM mode signing', () => {
  it('presigns the connect URL for execute-api with the credentials, region and time given', async () => {
    const url = buildConnectUrl('wss://abc123.execute-api.eu-west-1.amazonaws.com/prod', PARAMS);
    const signed = new URL(
      await presignConnectUrl(url, { region: 'eu-west-1', credentials: CREDENTIALS, now: NOW }),
    );
    expect(signed.searchParams.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
    expect(signed.searchParams.get('X-Amz-Credential')).toBe(
      'AKIDEXAMPLE/20300101/eu-west-1/execute-api/aws4_request',
    );
    expect(signed.searchParams.get('X-Amz-Date')).toBe('20300101T000000Z');
    expect(signed.searchParams.get('X-Amz-SignedHeaders')).toBe('host');
    expect(signed.searchParams.get('X-Amz-Security-Token')).toBe('session-token-example');
    expect(signed.searchParams.getAll('ip')).toEqual(['10.0.1.17', 'fd00::17']);
    expect(await verify(signed.host, `${signed.pathname}${signed.search}`, 'eu-west-1')).toBe(true);
  });

  it("carries the agent's version, and stays under API Gateway's 4,096-character URL limit", async () => {
    // An instance profile's session token is ~1,000-1,300 characters; 1,400 leaves a margin.
    const credentials = { ...CREDENTIALS, sessionToken: 'T'.repeat(1_400) };
    const base = 'wss://abcdefghij.execute-api.ap-southeast-2.amazonaws.com/production';
    const presign = (url: string) =>
      presignConnectUrl(url, { region: 'ap-southeast-2', credentials, now: NOW });
    const without = await presign(buildConnectUrl(base, PARAMS));
    const withVersion = await presign(
      buildConnectUrl(base, { ...PARAMS, agentVersion: '0.2.0-dev' }),
    );
    expect(new URL(withVersion).searchParams.get('agentVersion')).toBe('0.2.0-dev');
    expect(withVersion.length - without.length).toBe('&agentVersion=0.2.0-dev'.length);
    expect(withVersion.length).toBeLessThan(4_096);
  });

  it("signs like the SDK's signer a path that needs encoding, an explicit port and repeated, prefixed names", async () => {
    const url =
      'wss://registrar.example.com:8443/a%20b/st~age?ip=fd00::1&ip=10.0.0.1&ip2=x&label=a%3Db+c';
    const signed = new URL(
      await presignConnectUrl(url, { region: 'eu-west-1', credentials: CREDENTIALS, now: NOW }),
    );
    expect(signed.host).toBe('registrar.example.com:8443');
    expect(signed.pathname).toBe('/a%20b/st~age');
    expect(await verify(signed.host, `${signed.pathname}${signed.search}`, 'eu-west-1')).toBe(true);
  });

  it('a signature does not verify once a parameter is changed', async () => {
    const url = buildConnectUrl('wss://abc123.execute-api.eu-west-1.amazonaws.com/prod', PARAMS);
    const signed = new URL(
      await presignConnectUrl(url, { region: 'eu-west-1', credentials: CREDENTIALS, now: NOW }),
    );
    signed.searchParams.set('group', 'admin');
    expect(await verify(signed.host, `${signed.pathname}${signed.search}`, 'eu-west-1')).toBe(
      false,
    );
  });

  it('the upgrade request on the wire carries a signature valid for its Host header', async () => {
    let received: IncomingMessage | undefined;
    const server = createServer();
    server.on('upgrade', (request, socket) => {
      received = request;
      socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/prod`;
    try {
      const prepared = await iamAuthenticator('eu-west-1', async () => CREDENTIALS).prepare(
        buildConnectUrl(base, PARAMS),
      );
      await expect(
        openLink(prepared.url, prepared.headers, {
          clock: systemClock,
          connectTimeoutMs: 2_000,
          replyTimeoutMs: 1_000,
        }),
      ).rejects.toBeInstanceOf(RefusedError);
      expect(received?.headers.authorization).toBeUndefined();
      expect(await verify(received?.headers.host ?? '', received?.url ?? '', 'eu-west-1')).toBe(
        true,
      );
    } finally {
      server.close();
    }
  });

  it('reads the region from an execute-api host name and not from a custom domain', () => {
    expect(regionFromUrl('wss://abc123.execute-api.ap-southeast-2.amazonaws.com/prod')).toBe(
      'ap-southeast-2',
    );
    expect(regionFromUrl('wss://registrar.example.com/')).toBeUndefined();
  });

  it('IAM mode signs with the default credential chain and the region of the execute-api host', async () => {
    // The chain's environment step stands in for the instance profile (no IMDS here).
    process.env.AWS_ACCESS_KEY_ID = 'AKIDFROMCHAIN';
    process.env.AWS_SECRET_ACCESS_KEY = 'secret-from-chain';
    try {
      const auth = await createAuthenticator(
        { mode: 'iam' },
        'wss://abc123.execute-api.ca-central-1.amazonaws.com/prod',
        'eu-west-1',
      );
      const prepared = await auth.prepare(
        'wss://abc123.execute-api.ca-central-1.amazonaws.com/prod?group=web',
      );
      const credential = new URL(prepared.url).searchParams.get('X-Amz-Credential');
      expect(credential).toMatch(/^AKIDFROMCHAIN\/\d{8}\/ca-central-1\/execute-api\/aws4_request$/);
      expect(prepared.headers).toEqual({});
    } finally {
      delete process.env.AWS_ACCESS_KEY_ID;
      delete process.env.AWS_SECRET_ACCESS_KEY;
    }
  });

  it('IAM mode refuses to start when no region can be told for a custom domain', async () => {
    await expect(
      createAuthenticator({ mode: 'iam' }, 'wss://registrar.example.com/', undefined),
    ).rejects.toThrow(
      new AuthSetupError(
        'cannot tell the AWS region for IAM signing from registrar.example.com; pass --region <region>',
      ),
    );
  });
});
