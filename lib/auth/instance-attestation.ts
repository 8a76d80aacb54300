import type { X509Certificate } from 'node:crypto';
import { canonicalAddress } from '../domain/address.ts';
import { ForbiddenError } from '../domain/errors.ts';
import type { ConnectRequest, VerifiedIdentity } from '../domain/model.ts';
import {
  IDENTITY_DOCUMENT_HEADER,
  IDENTITY_SIGNATURE_HEADER,
  type IdentityEvidence,
} from '../protocol/identity-evidence.ts';
import { parseAssumedRoleArn } from './iam-caller.ts';
import { verifyInstanceIdentityDocument } from './instance-identity-document.ts';

/**
 * IAM mode's verified placement (DESIGN "Verified placement"): SigV4 proves which role session
 * connects, and EC2 names its sessions after the instance, but the address and zone in the
 * query string are still the agent's word. The instance identity document is EC2's own,
 * signed statement of them.
 *
 * - `required`: a connect without a document is refused 403.
 * - `optional`: a connect without a document is accepted on the caller's word (as before
 *   attestation existed); one WITH a document must verify and agree, as in `required`.
 */
export type AttestationMode = 'required' | 'optional';

export interface InstanceAttestation {
  mode: AttestationMode;
  /** The certificates a document's signature may verify under (AWS's RSA ones, per Region). */
  trusted: readonly X509Certificate[];
}

export interface AttestedConnect {
  request: ConnectRequest;
  identity: VerifiedIdentity;
}

/**
 * The connect as the registrar believes it: with a verified document, the identity names the
 * instance and the locality is the document's `region/availabilityZone` (an agent's subzone
 * is kept: the document has none). Refusals (403, nothing written) name both values: the
 * agent's claim and the document's.
 *
 * The document is long-lived (one per instance, the same until it stops) and anyone who saw it
 * can present it; what stops another instance from replaying it is that its instanceId must
 * equal the role session name SigV4 verified, and its accountId the caller's account.
 */
export function attestPlacement(
  attestation: InstanceAttestation,
  evidence: IdentityEvidence | undefined,
  connect: AttestedConnect,
): AttestedConnect {
  const { request, identity } = connect;
  if (evidence === undefined) {
    if (attestation.mode === 'optional') return connect;
    throw new ForbiddenError(
      `this registrar requires the EC2 instance identity document in IAM mode and the connect carried none: send headers ${IDENTITY_DOCUMENT_HEADER} and ${IDENTITY_SIGNATURE_HEADER} (registrar-agent reads them from IMDSv2 on EC2, or from --identity-document and --identity-signature)`,
    );
  }
  const document = verifyInstanceIdentityDocument(
    evidence.document,
    evidence.signature,
    attestation.trusted,
  );
  const caller = parseAssumedRoleArn(identity.principal);
  if (caller?.sessionName !== document.instanceId) {
    throw new ForbiddenError(
      `the instance identity document's instanceId ${document.instanceId} disagrees with the caller's role session name ${caller?.sessionName ?? `(none: '${identity.principal}' is not an assumed role)`}: send this instance's own document, signing with its instance profile`,
    );
  }
  if (caller.account !== document.accountId) {
    throw new ForbiddenError(
      `the instance identity document's accountId ${document.accountId} disagrees with the caller's account ${caller.account}`,
    );
  }
  const address = request.ips[0] ?? '';
  const documented = canonicalAddress(document.privateIp);
  const privateIp = documented.ok ? documented.address : document.privateIp;
  if (address !== privateIp) {
    throw new ForbiddenError(
      `address ${address} disagrees with the instance identity document's privateIp ${privateIp}: register the instance's primary private address first`,
    );
  }
  const zone = `${document.region}/${document.availabilityZone}`;
  const attested: ConnectRequest = { ...request, locality: localityOf(request.locality, zone) };
  return { request: attested, identity: { ...identity, instanceId: document.instanceId } };
}

/**
 * `region/zone[/subzone]` from the document; an agent's locality must name the same region
 * and, when it names one, the same zone. A subzone (a rack, a cell) is the agent's to add.
 */
function localityOf(claimed: string | undefined, zone: string): string {
  if (claimed === undefined) return zone;
  const [region, availabilityZone, subzone] = claimed.split('/');
  const [documentRegion, documentZone] = zone.split('/');
  if (
    region !== documentRegion ||
    (availabilityZone !== undefined && availabilityZone !== documentZone)
  ) {
    throw new ForbiddenError(
      `locality ${claimed} disagrees with the instance identity document's region/availabilityZone ${zone}: leave --locality unset (it is read from the document) or give ${zone}[/<subzone>]`,
    );
  }
  return subzone === undefined ? zone : `${zone}/${subzone}`;
}
