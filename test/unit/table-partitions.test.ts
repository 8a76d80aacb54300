import { describe, expect, it } from 'vitest';
import { tableAccess } from '../../infra/constructs/table-access.ts';
import {
  NAMESPACE_INDEX_COMPLETE,
  namespaceIndexKey,
} from '../../lib/store/dynamodb-namespace-index.ts';
import { POLICY_PARTITION, policyKey } from '../../lib/store/dynamodb-policy-store.ts';
import { terminatedKey } from '../../lib/store/dynamodb-terminated-instances.ts';
import {
  connectionKey,
  entryKey,
  groupKey,
  TOKEN_PARTITION,
  tokenKey,
} from '../../lib/store/item-codec.ts';
import { PARTITIONS } from '../../lib/store/table-definition.ts';

/** IAM's StringLike: `*` matches any run of characters, everything else itself. */
function like(pattern: string, value: string): boolean {
  const escaped = pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replaceAll('*', '.*');
  return new RegExp(`^${escaped}$`).test(value);
}

describe('the partitions IAM grants name are the ones the store writes', () => {
  const ref = { namespace: 'shop', name: 'web' };

  it.each([
    ['a group', groupKey(ref).pk, PARTITIONS.namespaces],
    ['an entry', entryKey(ref).pk, PARTITIONS.namespaces],
    ['a connection record', connectionKey('Lx1abcd=').pk, PARTITIONS.connections],
    ['a join token', tokenKey('abcdefghijkl').pk, PARTITIONS.tokens],
    [
      'an IAM allow rule',
      policyKey('arn:aws:iam::123456789012:role/vm', 'shop').pk,
      PARTITIONS.policies,
    ],
    ['a namespace index item', namespaceIndexKey('shop').pk, PARTITIONS.namespaceIndex],
    [
      'a terminated instance record',
      terminatedKey('i-0123456789abcdef0').pk,
      PARTITIONS.terminated,
    ],
    [
      'the namespace index marker',
      namespaceIndexKey(NAMESPACE_INDEX_COMPLETE).pk,
      PARTITIONS.namespaceIndex,
    ],
  ])('%s is keyed inside its granted partition', (_what, pk, pattern) => {
    expect(like(pattern, pk)).toBe(true);
  });

  it('keeps tokens and allow rules out of the namespace and connection patterns', () => {
    for (const pk of [TOKEN_PARTITION, POLICY_PARTITION, PARTITIONS.namespaceIndex]) {
      expect(like(PARTITIONS.namespaces, pk)).toBe(false);
      expect(like(PARTITIONS.connections, pk)).toBe(false);
    }
  });

  it('gives no function but the authorizer the token partition', () => {
    for (const name of ['connect', 'disconnect', 'message', 'sweeper', 'projector'] as const) {
      for (const mode of ['token', 'iam'] as const) {
        const partitions = tableAccess(name, mode).items.flatMap((item) => item.partitions);
        expect(partitions, `${name} (${mode})`).not.toContain(PARTITIONS.tokens);
      }
    }
  });
});
