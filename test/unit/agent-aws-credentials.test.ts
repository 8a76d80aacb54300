import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { instanceCredentials } from '../../agent/aws-credentials.ts';
import { type ImdsStandIn, startImdsStandIn } from '../fixtures/agent-imds-stand-in.ts';

// IMDS is a local stand-in (test/fixtures/agent-imds-stand-in.ts): these tests do not run on EC2.
const ROLE_PATH = 'iam/security-credentials/';
const T0 = Date.parse('2030-01-01T00:00:00Z');

function roleDocument(key: string, expiresAt: number): string {
  return JSON.stringify({
    Code: 'Success',
    Type: 'AWS-HMAC',
    AccessKeyId: key,
    SecretAccessKey: `secret-of-${key}`,
    Token: `token-of-${key}`,
    Expiration: new Date(expiresAt).toISOString(),
  });
}

describe('IAM mode credentials', () => {
  let imds: ImdsStandIn;
  beforeAll(async () => {
    imds = await startImdsStandIn({});
  });
  afterAll(() => imds.close());
  const options = () => ({ baseUrl: imds.url, timeoutMs: 1_000 });

  it('takes the environment keys first, without asking IMDS', async () => {
    imds.data = {};
    const before = imds.tokenRequests;
    const credentials = instanceCredentials(options(), {
      AWS_ACCESS_KEY_ID: 'AKIDENV',
      AWS_SECRET_ACCESS_KEY: 'env-secret',
      AWS_SESSION_TOKEN: 'env-token',
    });
    expect(await credentials()).toEqual({
      accessKeyId: 'AKIDENV',
      secretAccessKey: 'env-secret',
      sessionToken: 'env-token',
    });
    expect(imds.tokenRequests).toBe(before);
  });

  it("reads the instance profile's role credentials over IMDSv2 and keeps them until near expiry", async () => {
    imds.data = {
      [ROLE_PATH]: 'web-vm\n',
      [`${ROLE_PATH}web-vm`]: roleDocument('ASIAFIRST', T0 + 60 * 60_000),
    };
    let now = T0;
    const credentials = instanceCredentials(options(), {}, () => now);
    expect(await credentials()).toEqual({
      accessKeyId: 'ASIAFIRST',
      secretAccessKey: 'secret-of-ASIAFIRST',
      sessionToken: 'token-of-ASIAFIRST',
      expiration: new Date(T0 + 60 * 60_000),
    });
    imds.data[`${ROLE_PATH}web-vm`] = roleDocument('ASIASECOND', T0 + 2 * 60 * 60_000);
    now = T0 + 50 * 60_000; // 10 minutes left: the cached ones still serve
    expect((await credentials()).accessKeyId).toBe('ASIAFIRST');
    now = T0 + 56 * 60_000; // 4 minutes left: refreshed
    expect((await credentials()).accessKeyId).toBe('ASIASECOND');
  });

  it('signs with still-valid credentials when a refresh fails, and fails once they expired', async () => {
    imds.data = {
      [ROLE_PATH]: 'web-vm',
      [`${ROLE_PATH}web-vm`]: roleDocument('ASIAOLD', T0 + 60 * 60_000),
    };
    let now = T0;
    const credentials = instanceCredentials(options(), {}, () => now);
    await credentials();
    imds.data = { [ROLE_PATH]: 'web-vm', [`${ROLE_PATH}web-vm`]: '{"Code":"Failed"}' };
    now = T0 + 58 * 60_000;
    expect((await credentials()).accessKeyId).toBe('ASIAOLD');
    now = T0 + 61 * 60_000;
    await expect(credentials()).rejects.toThrow(
      'instance profile credentials for role web-vm: IMDS answered Code=Failed',
    );
  });

  it('says there is no instance profile when IMDS has no role', async () => {
    imds.data = {};
    await expect(instanceCredentials(options(), {})()).rejects.toThrow(
      'no AWS credentials: this instance has no instance profile (IMDS /latest/meta-data/iam/security-credentials/: HTTP 404); attach one or set AWS_ACCESS_KEY_ID',
    );
  });

  it('names both sources when neither the environment nor IMDS has credentials', async () => {
    await expect(
      instanceCredentials({ baseUrl: 'http://127.0.0.1:1', timeoutMs: 300 }, {})(),
    ).rejects.toThrow(
      /^no AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set, and the EC2 instance metadata service at http:\/\/127\.0\.0\.1:1 /,
    );
  });
});
