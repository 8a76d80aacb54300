import { ApiException, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { SidecarUnavailableError } from '../protocol/sidecar-message.ts';
import { type MeshIssuer, MeshIssuerError, type MintedToken } from './mesh-issuer.ts';
import { MeshSubject } from './mesh-subject.ts';

/** Where Istio publishes its root certificate into every namespace of the mesh. */
export const ROOT_CERT_CONFIG_MAP = 'istio-ca-root-cert';
export const ROOT_CERT_KEY = 'root-cert.pem';

export interface KubeMeshIssuerOptions {
  /** A kubeconfig for each use: on EKS its bearer token is signed anew (valid 15 min). */
  kubeConfig: () => Promise<KubeConfig>;
  /** How long a root certificate read is reused; Istio rotates it over days. Default 60 s. */
  rootCertCacheMs?: number;
  now?: () => number;
}

/**
 * The MeshIssuer over the Kubernetes API: `POST .../serviceaccounts/<sa>/token` (TokenRequest)
 * and `GET .../configmaps/istio-ca-root-cert`. The path of the token request is built from a
 * MeshSubject alone, checked at run time too, so nothing but a held entry's own service
 * account can appear in it.
 */
export function createKubeMeshIssuer(options: KubeMeshIssuerOptions): MeshIssuer {
  const now = options.now ?? Date.now;
  const cacheMs = options.rootCertCacheMs ?? 60_000;
  const rootCerts = new Map<string, { pem: string; until: number }>();
  const api = async () => (await options.kubeConfig()).makeApiClient(CoreV1Api);

  return {
    async mintToken(subject, audience, lifetimeSeconds): Promise<MintedToken> {
      if (!MeshSubject.is(subject)) {
        throw new TypeError('a mesh identity is minted only for a MeshSubject of a held entry');
      }
      const { namespace, serviceAccount: name } = subject;
      let answer: Awaited<ReturnType<CoreV1Api['createNamespacedServiceAccountToken']>>;
      try {
        answer = await (await api()).createNamespacedServiceAccountToken({
          name,
          namespace,
          body: {
            apiVersion: 'authentication.k8s.io/v1',
            kind: 'TokenRequest',
            spec: { audiences: [audience], expirationSeconds: lifetimeSeconds },
          },
        });
      } catch (error) {
        if (error instanceof ApiException && error.code === 404) {
          throw new SidecarUnavailableError(
            `service account ${namespace}/${name} does not exist in the cluster; create it (kubectl create serviceaccount ${name} -n ${namespace})`,
          );
        }
        throw issuerError(error, `mint a token for service account ${namespace}/${name}`);
      }
      const token = answer.status?.token;
      const expiresAt = answer.status?.expirationTimestamp;
      if (!token || !expiresAt) {
        throw new MeshIssuerError('the TokenRequest answer has no token or expiry', 502);
      }
      return { token, expiresAt: new Date(expiresAt) };
    },

    async rootCert(namespace) {
      const cached = rootCerts.get(namespace);
      if (cached && cached.until > now()) return cached.pem;
      try {
        const map = await (await api()).readNamespacedConfigMap({
          name: ROOT_CERT_CONFIG_MAP,
          namespace,
        });
        const pem = map.data?.[ROOT_CERT_KEY];
        if (!pem) return undefined;
        rootCerts.set(namespace, { pem, until: now() + cacheMs });
        return pem;
      } catch (error) {
        if (error instanceof ApiException && error.code === 404) return undefined;
        throw issuerError(error, `read ConfigMap ${namespace}/${ROOT_CERT_CONFIG_MAP}`);
      }
    },
  };
}

/** The API server's Status message, with what was being done; never a token. */
function issuerError(error: unknown, doing: string): MeshIssuerError {
  if (error instanceof ApiException) {
    const detail = statusMessage(error.body) ?? error.message;
    return new MeshIssuerError(
      `${doing}: the API server answered ${error.code}: ${detail}`,
      error.code,
    );
  }
  const cause = (error as Error).cause;
  const why = cause instanceof Error && cause.message ? ` (${cause.message})` : '';
  return new MeshIssuerError(`${doing}: ${(error as Error).message}${why}`, 0);
}

/** The Status object's `message` (the client hands the body over as text or as an object). */
function statusMessage(body: unknown): string | undefined {
  let parsed = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      return body.slice(0, 300) || undefined;
    }
  }
  const message = (parsed as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' ? message : undefined;
}
