import { describe, expect, it } from 'vitest';
import { attestPlacement, type InstanceAttestation } from '../../lib/auth/instance-attestation.ts';
import { parseCertificates } from '../../lib/auth/instance-identity-document.ts';
import { ForbiddenError, InvalidRequestError } from '../../lib/domain/errors.ts';
import type { ConnectRequest, VerifiedIdentity } from '../../lib/domain/model.ts';
import {
  evidenceHeaders,
  IDENTITY_DOCUMENT_HEADER,
  IDENTITY_SIGNATURE_HEADER,
  type IdentityEvidence,
  readIdentityEvidence,
} from '../../lib/protocol/identity-evidence.ts';
import { createTestSigner, identityDocument } from '../fixtures/instance-identity-signer.ts';

const INSTANCE = 'i-0123456789abcdef0';
const signer = createTestSigner();
const required: InstanceAttestation = {
  mode: 'required',
  trusted: parseCertificates(signer.certificatePem),
};
const optional: InstanceAttestation = { ...required, mode: 'optional' };
const identity: VerifiedIdentity = {
  principal: `arn:aws:sts::123456789012:assumed-role/web-vm/${INSTANCE}`,
  namespace: 'shop',
};
const request = (overrides: Partial<ConnectRequest> = {}): ConnectRequest => ({
  group: 'web',
  namespace: 'shop',
  ips: ['10.0.0.5'],
  labels: {},
  ...overrides,
});

/** The evidence as the registrar reads it off the wire, through the two headers. */
function evidence(fields: Partial<Parameters<typeof identityDocument>[0]> = {}): IdentityEvidence {
  const document = identityDocument({
    instanceId: INSTANCE,
    privateIp: '10.0.0.5',
    accountId: '123456789012',
    availabilityZone: 'us-east-1c',
    ...fields,
  });
  const headers = evidenceHeaders(Buffer.from(document), signer.sign(document));
  return readIdentityEvidence(headers) as IdentityEvidence;
}

describe('attestPlacement', () => {
  it("takes the zone from the document and names the instance in the caller's identity", () => {
    const attested = attestPlacement(required, evidence(), { request: request(), identity });

    expect(attested.request.locality).toBe('us-east-1/us-east-1c');
    expect(attested.identity).toEqual({ ...identity, instanceId: INSTANCE });
  });

  it("keeps an agent's subzone under the document's region and zone", () => {
    const attested = attestPlacement(required, evidence(), {
      request: request({ locality: 'us-east-1/us-east-1c/rack-7' }),
      identity,
    });

    expect(attested.request.locality).toBe('us-east-1/us-east-1c/rack-7');
  });

  it("refuses an address other than the document's privateIp, naming both", () => {
    expect(() =>
      attestPlacement(required, evidence(), { request: request({ ips: ['10.0.0.9'] }), identity }),
    ).toThrow(
      /^address 10\.0\.0\.9 disagrees with the instance identity document's privateIp 10\.0\.0\.5/,
    );
  });

  it("refuses a zone other than the document's, naming both", () => {
    expect(() =>
      attestPlacement(required, evidence(), {
        request: request({ locality: 'us-east-1/us-east-1a' }),
        identity,
      }),
    ).toThrow(
      /^locality us-east-1\/us-east-1a disagrees with the instance identity document's region\/availabilityZone us-east-1\/us-east-1c/,
    );
  });

  it("refuses another instance's document: its instanceId is not the caller's session", () => {
    expect(() =>
      attestPlacement(required, evidence({ instanceId: 'i-0fedcba9876543210' }), {
        request: request(),
        identity,
      }),
    ).toThrow(
      /^the instance identity document's instanceId i-0fedcba9876543210 disagrees with the caller's role session name i-0123456789abcdef0/,
    );
  });

  it("refuses a document of another account than the caller's", () => {
    expect(() =>
      attestPlacement(required, evidence({ accountId: '999999999999' }), {
        request: request(),
        identity,
      }),
    ).toThrow(
      "the instance identity document's accountId 999999999999 disagrees with the caller's account 123456789012",
    );
  });

  it('refuses a connect without a document when attestation is required (403)', () => {
    expect(() => attestPlacement(required, undefined, { request: request(), identity })).toThrow(
      ForbiddenError,
    );
  });

  it("accepts a connect without a document on the caller's word when attestation is optional", () => {
    const connect = { request: request({ ips: ['10.0.0.9'] }), identity };

    expect(attestPlacement(optional, undefined, connect)).toBe(connect);
  });

  it('still checks a document that comes with a connect when attestation is optional', () => {
    expect(() =>
      attestPlacement(optional, evidence(), { request: request({ ips: ['10.0.0.9'] }), identity }),
    ).toThrow(ForbiddenError);
  });
});

describe('readIdentityEvidence', () => {
  it('reads the headers whatever their case, as the exact bytes the agent encoded', () => {
    const document = identityDocument({ instanceId: INSTANCE, privateIp: '10.0.0.5' });
    const headers = evidenceHeaders(Buffer.from(document), signer.sign(document));
    const lower = Object.fromEntries(
      Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]),
    );

    expect(readIdentityEvidence(lower)?.document.toString('utf8')).toBe(document);
  });

  it('reads no evidence from a connect without the headers', () => {
    expect(readIdentityEvidence({ Host: 'example' })).toBeUndefined();
  });

  it('refuses one header without the other (400), naming the missing one', () => {
    expect(() => readIdentityEvidence({ [IDENTITY_DOCUMENT_HEADER]: 'e30' })).toThrow(
      new InvalidRequestError(
        `header ${IDENTITY_DOCUMENT_HEADER} given without ${IDENTITY_SIGNATURE_HEADER}; send both (the document and its signature) or neither`,
        IDENTITY_SIGNATURE_HEADER,
      ),
    );
  });

  it('refuses a value that is not base64url (400)', () => {
    expect(() =>
      readIdentityEvidence({
        [IDENTITY_DOCUMENT_HEADER]: '{"instanceId":1}',
        [IDENTITY_SIGNATURE_HEADER]: 'abc',
      }),
    ).toThrow(/is not base64url/);
  });
});
