import type { MeshSubject } from './mesh-subject.ts';

/** A ServiceAccount token as the TokenRequest API returned it. */
export interface MintedToken {
  token: string;
  /** The API server's `status.expirationTimestamp` (it may shorten the lifetime asked for). */
  expiresAt: Date;
}

/**
 * What the sidecar bootstrap needs from the cluster, and nothing more: one verb that mints,
 * for a MeshSubject only (so for the held entry's own service account), and one read of the
 * public root certificate Istio publishes into every namespace. The Kubernetes adapter is
 * kube-mesh-issuer.ts; its RBAC is `create` on `serviceaccounts/token` (docs/kubernetes.md).
 */
export interface MeshIssuer {
  mintToken(subject: MeshSubject, audience: string, lifetimeSeconds: number): Promise<MintedToken>;
  /** `istio-ca-root-cert`'s `root-cert.pem` in the namespace; undefined when it is not there. */
  rootCert(namespace: string): Promise<string | undefined>;
}

/** The cluster answered with something the registrar cannot turn into a mesh identity. */
export class MeshIssuerError extends Error {
  readonly statusCode: number;

  constructor(message: string, statusCode: number) {
    super(message);
    this.name = new.target.name;
    this.statusCode = statusCode;
  }
}
