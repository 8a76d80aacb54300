import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  certificateOfRegion,
  fingerprintOf,
  KNOWN_REGIONS,
  PINNED_FINGERPRINTS,
} from '../../lib/auth/aws-instance-identity-certs.ts';
import {
  loadTrustedCertificates,
  parseCertificates,
  verifyInstanceIdentityDocument,
} from '../../lib/auth/instance-identity-document.ts';
import { ForbiddenError, InvalidRequestError } from '../../lib/domain/errors.ts';
import { createTestSigner, identityDocument } from '../fixtures/instance-identity-signer.ts';

const signer = createTestSigner();
const trusted = parseCertificates(signer.certificatePem);
const DOCUMENT = identityDocument({ instanceId: 'i-0123456789abcdef0', privateIp: '10.0.0.5' });

const bytes = (text: string) => Buffer.from(text, 'utf8');
const signatureOf = (document: string) => Buffer.from(signer.sign(document), 'base64');

describe('verifyInstanceIdentityDocument', () => {
  it('returns the fields of a document signed by a trusted certificate', () => {
    const document = verifyInstanceIdentityDocument(
      bytes(DOCUMENT),
      signatureOf(DOCUMENT),
      trusted,
    );

    expect(document).toEqual({
      accountId: '000000000000',
      instanceId: 'i-0123456789abcdef0',
      privateIp: '10.0.0.5',
      availabilityZone: 'us-east-1a',
      region: 'us-east-1',
      pendingTime: '2026-03-01T12:00:00Z',
    });
  });

  it('refuses a document changed after it was signed (403)', () => {
    const tampered = DOCUMENT.replace('10.0.0.5', '10.0.0.9');

    expect(() =>
      verifyInstanceIdentityDocument(bytes(tampered), signatureOf(DOCUMENT), trusted),
    ).toThrow(ForbiddenError);
  });

  it('refuses a document signed by a key it does not trust, naming the claimed region', () => {
    const stranger = createTestSigner('someone else');
    const signature = Buffer.from(stranger.sign(DOCUMENT), 'base64');

    expect(() => verifyInstanceIdentityDocument(bytes(DOCUMENT), signature, trusted)).toThrow(
      /does not verify against any of the 1 trusted AWS certificate\(s\) \(the document claims region us-east-1\)/,
    );
  });

  it('refuses a signature of the wrong length without throwing anything but a refusal', () => {
    expect(() =>
      verifyInstanceIdentityDocument(bytes(DOCUMENT), Buffer.from('short'), trusted),
    ).toThrow(ForbiddenError);
  });

  it('refuses a signed document that lacks the fields it is read for (400)', () => {
    const partial = JSON.stringify({ instanceId: 'i-0123456789abcdef0' });

    expect(() =>
      verifyInstanceIdentityDocument(bytes(partial), signatureOf(partial), trusted),
    ).toThrow(
      new InvalidRequestError(
        'the instance identity document lacks accountId, privateIp, availabilityZone, region',
        'identityDocument',
      ),
    );
  });
});

describe("AWS's published certificates, pinned", () => {
  const published = certificateOfRegion('us-east-1');
  const US_EAST_1 = { names: ['us-east-1'], source: 'REGISTRAR_INSTANCE_IDENTITY_REGIONS' };

  it("parses as AWS's self-signed RSA certificate for us-east-1, byte for byte intact", () => {
    const certificate = new X509Certificate(published.pem);

    expect(published.region).toBe('us-east-1');
    expect(certificate.subject).toContain('O=Amazon Web Services LLC');
    expect(certificate.publicKey.asymmetricKeyType).toBe('rsa');
    expect(certificate.validTo).toBe('Apr 28 17:34:01 2029 GMT');
    // Self-signed: one changed byte anywhere would break this signature.
    expect(certificate.verify(certificate.publicKey)).toBe(true);
    // The fingerprint the EC2 User Guide shows, written here apart from the code's pin.
    expect(certificate.fingerprint256).toBe(
      '65:02:D1:18:33:53:7B:9C:F0:A6:4D:96:D9:83:CA:76:FE:31:7D:3E:C7:5A:82:E5:94:0C:A0:53:90:EA:A5:9F',
    );
  });

  it("pins every Region's certificate, each AWS's own, self-signed and intact", () => {
    expect(KNOWN_REGIONS).toEqual(
      expect.arrayContaining(['us-east-1', 'eu-west-1', 'ap-southeast-2']),
    );
    expect(KNOWN_REGIONS.length).toBeGreaterThanOrEqual(30);
    for (const region of KNOWN_REGIONS) {
      const certificate = new X509Certificate(certificateOfRegion(region).pem);
      expect(fingerprintOf(certificate), region).toBe(PINNED_FINGERPRINTS[region]);
      // Amazon Web Services LLC, or Amazon.com Inc. (CN=ec2.amazonaws.com) for a few Regions.
      expect(certificate.subject, region).toMatch(/^O=Amazon(\.com Inc\.| Web Services LLC)$/m);
      expect(certificate.publicKey.asymmetricKeyType, region).toBe('rsa');
      expect(certificate.verify(certificate.publicKey), region).toBe(true);
    }
  });

  it('trusts only the Regions asked for, and refuses a document it did not sign', () => {
    const aws = loadTrustedCertificates(undefined, 'REGISTRAR_INSTANCE_IDENTITY_CERTS', {
      names: ['us-east-1', 'eu-west-1', 'us-east-1'],
      source: 'REGISTRAR_INSTANCE_IDENTITY_REGIONS',
    });

    expect(aws.map(fingerprintOf)).toEqual([
      PINNED_FINGERPRINTS['us-east-1'],
      PINNED_FINGERPRINTS['eu-west-1'],
    ]);
    expect(() =>
      verifyInstanceIdentityDocument(bytes(DOCUMENT), signatureOf(DOCUMENT), aws),
    ).toThrow(ForbiddenError);
  });

  it('refuses a Region it has no pin for, naming the variable and the Region', () => {
    expect(() =>
      loadTrustedCertificates(undefined, 'REGISTRAR_INSTANCE_IDENTITY_CERTS', {
        ...US_EAST_1,
        names: ['us-east-1', 'xx-nowhere-1'],
      }),
    ).toThrow(
      /^REGISTRAR_INSTANCE_IDENTITY_REGIONS 'us-east-1,xx-nowhere-1': no pinned AWS instance identity certificate for Region 'xx-nowhere-1'/,
    );
  });

  it('trusts no Region at all when given none', () => {
    expect(() =>
      loadTrustedCertificates(undefined, 'REGISTRAR_INSTANCE_IDENTITY_CERTS', {
        ...US_EAST_1,
        names: [],
      }),
    ).toThrow(/names no Region/);
  });
});

describe('loadTrustedCertificates', () => {
  const dir = mkdtempSync(join(tmpdir(), 'iid-certs-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads every certificate of a PEM file', () => {
    const file = join(dir, 'two.pem');
    writeFileSync(file, `${signer.certificatePem}\n${certificateOfRegion('us-east-1').pem}\n`);

    expect(loadTrustedCertificates(file, '--instance-identity-certs')).toHaveLength(2);
  });

  it('takes PEM text itself', () => {
    expect(loadTrustedCertificates(signer.certificatePem, 'VAR')).toHaveLength(1);
  });

  it('names the source and the path of a file that holds no certificate', () => {
    const file = join(dir, 'empty.pem');
    writeFileSync(file, 'not a certificate\n');

    expect(() => loadTrustedCertificates(file, '--instance-identity-certs')).toThrow(
      `--instance-identity-certs '${file}': holds no PEM certificate`,
    );
  });

  it('names a file it cannot read', () => {
    expect(() => loadTrustedCertificates(join(dir, 'absent.pem'), 'VAR')).toThrow(
      /^VAR '.*absent\.pem': cannot read the PEM file/,
    );
  });

  it('refuses a certificate whose body is corrupt, naming its position', () => {
    const broken = signer.certificatePem.replace(/\n[A-Za-z0-9+/]{20}/, '\n!!!!');

    expect(() => loadTrustedCertificates(broken, 'VAR')).toThrow(
      /^VAR \(PEM text\): certificate 1 does not parse/,
    );
  });
});
