import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { describe, expect, it } from 'vitest';
import {
  type IamCallerCredentials,
  type PresignedRequest,
  SigV4Verifier,
  validateCallers,
} from '../../infra/local/sigv4-verifier.ts';
import { NodeSha256 } from '../../lib/aws/node-sha256.ts';

/**
 * The local gateway's SigV4 check against requests presigned by the AWS SDK's own signer, for
 * fixed credentials and a fixed time: what API Gateway accepts passes, and each way a presigned
 * upgrade goes wrong is refused 403 with API Gateway's message.
 */

const WEB_VM: IamCallerCredentials = {
  accessKeyId: 'AKIDWEBVM',
  secretAccessKey: 'web-vm-secret/K7MDENG+bPxRfiCYEXAMPLEKEY',
  arn: 'arn:aws:sts::000000000000:assumed-role/web-vm/i-0123',
};
const T0 = Date.UTC(2030, 0, 1, 12, 0, 0);
const HOST = '127.0.0.1:8080';

interface SignOptions {
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  region?: string;
  service?: string;
  at?: number;
  expiresIn?: number;
}

/** A presigned upgrade as the agent sends it, split into what the gateway reads. */
async function presigned(options: SignOptions = {}): Promise<PresignedRequest> {
  const signer = new SignatureV4({
    credentials: options.credentials ?? WEB_VM,
    region: options.region ?? 'us-east-1',
    service: options.service ?? 'execute-api',
    sha256: NodeSha256,
  });
  const signed = await signer.presign(
    new HttpRequest({
      method: 'GET',
      protocol: 'http:',
      hostname: '127.0.0.1',
      port: 8080,
      path: '/',
      query: { group: 'web', namespace: 'shop', ip: ['10.0.0.7', 'fd00::7'], label: 'app=web' },
      headers: { host: HOST },
    }),
    { signingDate: new Date(options.at ?? T0), expiresIn: options.expiresIn ?? 60 },
  );
  const query: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(signed.query ?? {})) {
    query[name] = Array.isArray(value) ? [...value] : [String(value)];
  }
  return { method: 'GET', path: '/', headers: { Host: HOST, 'User-Agent': 'test' }, query };
}

function verifier(now = T0, callers: IamCallerCredentials[] = [WEB_VM]): SigV4Verifier {
  return new SigV4Verifier({ callers, region: 'us-east-1', now: () => now });
}

describe('the local SigV4 check of a presigned upgrade', () => {
  it('accepts a request presigned by a known caller and reports its identity', async () => {
    const verdict = await verifier().verify(await presigned());

    expect(verdict).toMatchObject({
      ok: true,
      identity: {
        userArn: WEB_VM.arn,
        accountId: '000000000000',
        accessKey: 'AKIDWEBVM',
        caller: expect.stringMatching(/^AROA[0-9A-F]{17}:i-0123$/),
      },
    });
  });

  it('accepts a request signed with a session token when the caller has that token', async () => {
    const withToken = { ...WEB_VM, accessKeyId: 'ASIAWEBVM', sessionToken: 'session-1' };
    const request = await presigned({ credentials: withToken });

    expect((await verifier(T0, [withToken]).verify(request)).ok).toBe(true);
  });

  it('refuses a request whose query was changed after signing', async () => {
    const request = await presigned();
    request.query.namespace = ['prod'];

    expect(await verifier().verify(request)).toEqual({
      ok: false,
      statusCode: 403,
      errorType: 'InvalidSignatureException',
      message: expect.stringMatching(/^The request signature we calculated does not match/),
    });
  });

  it('refuses a request signed with another secret for the same key', async () => {
    const request = await presigned({
      credentials: { ...WEB_VM, secretAccessKey: 'not-the-secret' },
    });

    expect(await verifier().verify(request)).toMatchObject({
      ok: false,
      statusCode: 403,
      message: expect.stringMatching(/signature we calculated does not match/),
    });
  });

  it('refuses a request whose presigned lifetime has passed', async () => {
    const request = await presigned({ expiresIn: 60 });

    expect(await verifier(T0 + 61_000).verify(request)).toEqual({
      ok: false,
      statusCode: 403,
      errorType: 'InvalidSignatureException',
      message:
        'Signature expired: 20300101T120000Z is now earlier than 20300101T120001Z (20300101T120101Z - 60 sec.)',
    });
  });

  it('accepts a request until its lifetime ends', async () => {
    const request = await presigned({ expiresIn: 60 });

    expect((await verifier(T0 + 60_000).verify(request)).ok).toBe(true);
  });

  it('refuses a request dated more than 5 minutes in the future', async () => {
    const request = await presigned({ at: T0 + 5 * 60_000 + 1000 });

    expect(await verifier().verify(request)).toMatchObject({
      ok: false,
      message:
        'Signature not yet current: 20300101T120501Z is still later than 20300101T120500Z (20300101T120000Z + 5 min.)',
    });
  });

  it('accepts a request dated within the 5 minutes of allowed clock skew', async () => {
    const request = await presigned({ at: T0 + 4 * 60_000 });

    expect((await verifier().verify(request)).ok).toBe(true);
  });

  it('refuses an access key it does not know', async () => {
    const request = await presigned({
      credentials: { accessKeyId: 'AKIDSTRANGER', secretAccessKey: 'whatever' },
    });

    expect(await verifier().verify(request)).toEqual({
      ok: false,
      statusCode: 403,
      errorType: 'UnrecognizedClientException',
      message: 'The security token included in the request is invalid.',
    });
  });

  it('refuses a session token that is not the caller’s', async () => {
    const request = await presigned({ credentials: { ...WEB_VM, sessionToken: 'forged' } });

    expect(await verifier().verify(request)).toMatchObject({
      ok: false,
      message: 'The security token included in the request is invalid.',
    });
  });

  it('refuses a signature scoped to another region', async () => {
    const request = await presigned({ region: 'eu-west-1' });

    expect(await verifier().verify(request)).toMatchObject({
      ok: false,
      statusCode: 403,
      message: "Credential should be scoped to a valid region, not 'eu-west-1'.",
    });
  });

  it('refuses a signature scoped to another service', async () => {
    const request = await presigned({ service: 's3' });

    expect(await verifier().verify(request)).toMatchObject({
      ok: false,
      message: "Credential should be scoped to correct service: 'execute-api'.",
    });
  });

  it('refuses an unsigned request as API Gateway does', async () => {
    const request: PresignedRequest = {
      method: 'GET',
      path: '/',
      headers: { Host: HOST },
      query: { group: ['web'] },
    };

    expect(await verifier().verify(request)).toEqual({
      ok: false,
      statusCode: 403,
      errorType: 'MissingAuthenticationTokenException',
      message: 'Missing Authentication Token',
    });
  });

  it('refuses a request missing a signature parameter, naming it', async () => {
    const request = await presigned();
    delete request.query['X-Amz-Signature'];

    expect(await verifier().verify(request)).toMatchObject({
      ok: false,
      errorType: 'IncompleteSignatureException',
      message: expect.stringContaining('missing X-Amz-Signature'),
    });
  });

  it('refuses a request whose host differs from the one signed', async () => {
    const request = await presigned();
    request.headers.Host = '127.0.0.1:9090';

    expect((await verifier().verify(request)).ok).toBe(false);
  });
});

describe('the configured IAM callers', () => {
  it('refuses a caller without a secret, naming the entry', () => {
    expect(() => validateCallers([{ ...WEB_VM, secretAccessKey: '' }])).toThrow(
      'iamCallers[0].secretAccessKey must be a non-empty string',
    );
  });

  it('refuses an ARN that is not an IAM or STS principal', () => {
    expect(() => validateCallers([{ ...WEB_VM, arn: 'web-vm' }])).toThrow(
      "iamCallers[0].arn 'web-vm' is not an IAM or STS ARN",
    );
  });

  it('refuses the same access key twice', () => {
    expect(() => validateCallers([WEB_VM, WEB_VM])).toThrow(
      "iamCallers[1].accessKeyId 'AKIDWEBVM' is listed twice",
    );
  });
});
