import type { KubeConfig } from '@kubernetes/client-node';
import { createMeshIdentityHandler } from '../../functions/mesh-identity.ts';
import type { Dependencies, FunctionHandler } from '../../lib/dependencies.ts';
import { createKubeMeshIssuer } from '../../lib/mesh-identity/kube-mesh-issuer.ts';
import { readMeshSettings } from '../../lib/mesh-identity/mesh-settings.ts';
import type {
  WebSocketMessageEvent,
  WebSocketResult,
} from '../../lib/protocol/websocket-events.ts';

/**
 * `npm start --project`: the `sidecar` route served by the mesh function's handler, minting
 * in the cluster of the kubeconfig the projection uses (kubectl's current context), with the
 * `REGISTRAR_MESH_*` settings the runtime was given. A bad setting stops the start, naming it.
 */
export function localMeshIdentityHandler(
  deps: Dependencies,
  kubeConfig: KubeConfig,
  env: Record<string, string | undefined>,
): FunctionHandler<WebSocketMessageEvent, WebSocketResult> {
  return createMeshIdentityHandler({
    config: deps.config,
    store: deps.store,
    tokens: deps.tokens,
    policies: deps.policies,
    issuer: createKubeMeshIssuer({ kubeConfig: async () => kubeConfig }),
    settings: readMeshSettings(env),
    // Read at each use: the runtime sets it once its gateway listens.
    closeConnection: (connectionId) =>
      deps.closeConnection?.(connectionId) ?? Promise.resolve(undefined),
    now: deps.now,
  });
}
