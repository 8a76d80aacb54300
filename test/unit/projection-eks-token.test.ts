import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createEksToken, decodeEksToken } from '../../lib/projection/eks-token.ts';

const credentials = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  sessionToken: 'session/token+with=chars',
};
const signingDate = new Date('2025-01-02T03:04:05Z');

describe('EKS bearer token', () => {
  it('is k8s-aws-v1. + unpadded base64url of a presigned STS GetCallerIdentity URL', async () => {
    const token = await createEksToken({
      clusterName: 'prod',
      region: 'eu-west-1',
      credentials,
      signingDate,
    });

    expect(token.startsWith('k8s-aws-v1.')).toBe(true);
    expect(token).not.toMatch(/[=+/]/);
    const url = decodeEksToken(token);
    expect(url.origin).toBe('https://sts.eu-west-1.amazonaws.com');
    expect(url.pathname).toBe('/');
    const q = url.searchParams;
    expect(q.get('Action')).toBe('GetCallerIdentity');
    expect(q.get('Version')).toBe('2011-06-15');
    expect(q.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
    expect(q.get('X-Amz-Credential')).toBe('AKIDEXAMPLE/20250102/eu-west-1/sts/aws4_request');
    expect(q.get('X-Amz-Date')).toBe('20250102T030405Z');
    expect(q.get('X-Amz-Expires')).toBe('60');
    expect(q.get('X-Amz-Security-Token')).toBe('session/token+with=chars');
    expect(q.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('signs the x-k8s-aws-id header instead of moving it into the query', async () => {
    const url = decodeEksToken(
      await createEksToken({ clusterName: 'prod', region: 'eu-west-1', credentials, signingDate }),
    );

    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('host;x-k8s-aws-id');
    expect(url.searchParams.has('x-k8s-aws-id')).toBe(false);
  });

  it('carries a signature that covers the cluster name header (recomputed independently)', async () => {
    const url = decodeEksToken(
      await createEksToken({ clusterName: 'prod', region: 'eu-west-1', credentials, signingDate }),
    );
    const params = [...url.searchParams].filter(([key]) => key !== 'X-Amz-Signature');
    const enc = (text: string) =>
      encodeURIComponent(text).replace(
        /[!'()*]/g,
        (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
      );
    const canonicalQuery = params
      .map(([key, value]) => `${enc(key)}=${enc(value)}`)
      .sort()
      .join('&');
    const canonicalRequest = [
      'GET',
      '/',
      canonicalQuery,
      'host:sts.eu-west-1.amazonaws.com',
      'x-k8s-aws-id:prod',
      '',
      'host;x-k8s-aws-id',
      createHash('sha256').update('').digest('hex'),
    ].join('\n');
    const scope = '20250102/eu-west-1/sts/aws4_request';
    const stringToSign = [
      'AWS4-HMAC-SHA256',
      '20250102T030405Z',
      scope,
      createHash('sha256').update(canonicalRequest).digest('hex'),
    ].join('\n');
    let key: Buffer = createHmac('sha256', `AWS4${credentials.secretAccessKey}`)
      .update('20250102')
      .digest();
    for (const part of ['eu-west-1', 'sts', 'aws4_request'])
      key = createHmac('sha256', key).update(part).digest();

    expect(url.searchParams.get('X-Amz-Signature')).toBe(
      createHmac('sha256', key).update(stringToSign).digest('hex'),
    );
  });

  it('is deterministic for fixed credentials and time, and bound to the cluster name', async () => {
    const prod = await createEksToken({
      clusterName: 'prod',
      region: 'eu-west-1',
      credentials,
      signingDate,
    });
    const again = await createEksToken({
      clusterName: 'prod',
      region: 'eu-west-1',
      credentials,
      signingDate,
    });
    const staging = await createEksToken({
      clusterName: 'staging',
      region: 'eu-west-1',
      credentials,
      signingDate,
    });

    expect(again).toBe(prod);
    expect(decodeEksToken(staging).searchParams.get('X-Amz-Signature')).not.toBe(
      decodeEksToken(prod).searchParams.get('X-Amz-Signature'),
    );
  });

  it('refuses to decode something that is not an EKS token', () => {
    expect(() => decodeEksToken('Bearer abc')).toThrow("expected the prefix 'k8s-aws-v1.'");
  });
});
