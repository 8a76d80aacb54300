import { beforeAll, describe, expect, it } from 'vitest';
import {
  EXPIRES_AT_ATTRIBUTE,
  encodeConnectionRecord,
  encodeToken,
} from '../../lib/store/item-codec.ts';
import { synthTemplate } from './synth-stack.ts';

const CONNECTED_AT = Date.UTC(2026, 0, 1, 12, 0, 0, 250);
const record = {
  connectionId: 'abc=',
  entry: { namespace: 'shop', name: 'vm' },
  connectedAt: CONNECTED_AT,
};

describe('the registry table TTL', () => {
  let ttl: unknown;
  beforeAll(() => {
    const tables = synthTemplate({ options: { authMode: 'iam' } }).findResources(
      'AWS::DynamoDB::Table',
    );
    ttl = Object.values(tables)[0]?.Properties.TimeToLiveSpecification;
  });

  it('is on, on the attribute connection records are written with', () => {
    expect(ttl).toEqual({ AttributeName: EXPIRES_AT_ATTRIBUTE, Enabled: true });
    expect(encodeConnectionRecord(record)).toHaveProperty(EXPIRES_AT_ATTRIBUTE);
  });

  it('reads epoch seconds, as DynamoDB TTL requires: a connection record expires a day after the connect', () => {
    const expiresAt = encodeConnectionRecord(record).expiresAt;

    expect(Number.isInteger(expiresAt)).toBe(true);
    // 24 h after the connect, rounded up to the next whole second (never early).
    expect(expiresAt).toBe(Math.ceil((CONNECTED_AT + 24 * 3_600_000) / 1000));
    expect(new Date(expiresAt * 1000).toISOString()).toBe('2026-01-02T12:00:01.000Z');
  });

  it('never removes a join token: its expiry is not in the TTL attribute', () => {
    const token = {
      id: 't1',
      secretHash: 'h',
      namespace: 'shop',
      createdAt: CONNECTED_AT,
      expiresAt: CONNECTED_AT + 3_600_000,
    };
    // An expired or revoked token stays in the table and in `registrar token list`: TTL must
    // not remove it, so its expiry is `validUntil`, not the TTL attribute.
    const item = encodeToken(token);
    expect(item).not.toHaveProperty(EXPIRES_AT_ATTRIBUTE);
    expect(item.validUntil).toBe(CONNECTED_AT + 3_600_000);
  });
});
