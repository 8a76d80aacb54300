import { describe, expect, it } from 'vitest';
import {
  authorizeIamCaller,
  normalizeRoleArn,
  parseAssumedRoleArn,
} from '../../lib/auth/iam-caller.ts';
import type { IamPolicy, PolicyReader } from '../../lib/auth/policy-store.ts';
import {
  ForbiddenError,
  InvalidRequestError,
  UnauthenticatedError,
} from '../../lib/domain/errors.ts';

const SESSION = 'arn:aws:sts::123456789012:assumed-role/web-vm/i-0abc123def4567890';
const ROLE = 'arn:aws:iam::123456789012:role/web-vm';

/** A policy store in memory: these tests are about the decision, not the storage. */
function policies(...rules: Omit<IamPolicy, 'createdAt'>[]): PolicyReader {
  return {
    getPolicy: async (roleArn, namespace) => {
      const rule = rules.find((r) => r.roleArn === roleArn && r.namespace === namespace);
      return rule ? { ...rule, createdAt: 0 } : undefined;
    },
  };
}

describe('parseAssumedRoleArn', () => {
  it('finds the role, account and session of an EC2 instance-profile session', () => {
    expect(parseAssumedRoleArn(SESSION)).toEqual({
      userArn: SESSION,
      roleArn: ROLE,
      account: '123456789012',
      roleName: 'web-vm',
      sessionName: 'i-0abc123def4567890',
    });
  });

  it('keeps the partition of the session in the role ARN', () => {
    expect(
      parseAssumedRoleArn('arn:aws-cn:sts::123456789012:assumed-role/web-vm/i-1')?.roleArn,
    ).toBe('arn:aws-cn:iam::123456789012:role/web-vm');
  });

  it.each([
    ['an IAM user', 'arn:aws:iam::123456789012:user/alice'],
    ['the account root', 'arn:aws:iam::123456789012:root'],
    ['a federated user', 'arn:aws:sts::123456789012:federated-user/bob'],
    ['a role ARN (not a session)', ROLE],
    ['a session without a session name', 'arn:aws:sts::123456789012:assumed-role/web-vm'],
    ['a short account id', 'arn:aws:sts::12345:assumed-role/web-vm/i-1'],
  ])('refuses %s', (_what, arn) => {
    expect(parseAssumedRoleArn(arn)).toBeUndefined();
  });
});

describe('normalizeRoleArn', () => {
  it('accepts a role ARN as it is', () => {
    expect(normalizeRoleArn(ROLE)).toBe(ROLE);
  });

  it('drops the role path, which session ARNs do not carry', () => {
    expect(normalizeRoleArn('arn:aws:iam::123456789012:role/ops/fleet/web-vm')).toBe(ROLE);
  });

  it('refuses anything that is not a role ARN, naming the value', () => {
    expect(() => normalizeRoleArn('arn:aws:iam::123456789012:user/alice')).toThrow(
      new InvalidRequestError(
        "invalid role ARN 'arn:aws:iam::123456789012:user/alice': expected arn:aws:iam::<account>:role/<name>",
        'roleArn',
      ),
    );
  });
});

describe('authorizeIamCaller', () => {
  it('allows a role with a policy for the namespace, keeping the session as principal', async () => {
    const identity = await authorizeIamCaller(
      policies({ roleArn: ROLE, namespace: 'shop' }),
      SESSION,
      'shop',
    );
    expect(identity).toEqual({ principal: SESSION, namespace: 'shop' });
  });

  it("carries the policy's service account into the identity", async () => {
    const identity = await authorizeIamCaller(
      policies({ roleArn: ROLE, namespace: 'shop', serviceAccount: 'web-sa' }),
      SESSION,
      'shop',
    );
    expect(identity.serviceAccount).toBe('web-sa');
  });

  it('refuses a role allowed only in another namespace, naming role, namespace and the fix', async () => {
    await expect(
      authorizeIamCaller(policies({ roleArn: ROLE, namespace: 'billing' }), SESSION, 'shop'),
    ).rejects.toThrow(
      new ForbiddenError(
        `role '${ROLE}' may not register in namespace 'shop'; allow it with: registrar policy allow --role-arn ${ROLE} -n shop`,
      ),
    );
  });

  it('refuses every role when no policy exists (deny by default)', async () => {
    await expect(authorizeIamCaller(policies(), SESSION, 'shop')).rejects.toBeInstanceOf(
      ForbiddenError,
    );
  });

  it('refuses IAM user credentials with 403', async () => {
    await expect(
      authorizeIamCaller(
        policies({ roleArn: ROLE, namespace: 'shop' }),
        'arn:aws:iam::123456789012:user/alice',
        'shop',
      ),
    ).rejects.toThrow(/is not an assumed-role session/);
  });

  it('refuses a connect without a verified caller with 401', async () => {
    await expect(authorizeIamCaller(policies(), null, 'shop')).rejects.toBeInstanceOf(
      UnauthenticatedError,
    );
  });
});
