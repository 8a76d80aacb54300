import {
  ApiException,
  type Configuration,
  CoreV1Api,
  CustomObjectsApi,
  createConfiguration,
  DiscoveryV1Api,
  type KubeConfig,
  type SecurityAuthentication,
  ServerConfiguration,
  type V1EndpointSlice,
  Watch,
} from '@kubernetes/client-node';
import type { ObjectRef } from '../domain/model.ts';
import {
  type Cluster,
  ClusterError,
  type ClusterWatch,
  KindNotInstalledError,
  type ListOptions,
  type WatchEvent,
  WatchExpiredError,
  type WatchOptions,
  type WriteResult,
} from './cluster.ts';
import { apiVersionOf, KINDS, type Kind } from './kinds.ts';
import type { KubeObject } from './objects.ts';

/** Items per list page: large lists arrive in pages instead of one huge response. */
const PAGE_SIZE = 500;

/**
 * The Cluster port over @kubernetes/client-node: typed APIs for the built-in kinds (Service,
 * EndpointSlice), CustomObjectsApi for the CRDs. Every write is a PUT or POST carrying the
 * resourceVersion it read (optimistic concurrency, 409 on a stale version); no patches, so no
 * write can land on an object the projector has not looked at.
 */
export function createKubernetesCluster(config: KubeConfig): Cluster {
  const configuration = pooledConfiguration(config);
  const custom = new CustomObjectsApi(configuration);
  const discovery = new DiscoveryV1Api(configuration);
  const core = new CoreV1Api(configuration);

  async function listPage(
    kind: Kind,
    options: ListOptions,
    cont: string | undefined,
  ): Promise<KubeList> {
    const { namespace, labelSelector } = options;
    const page = { labelSelector, limit: PAGE_SIZE, _continue: cont };
    if (kind === 'Service') {
      return namespace
        ? core.listNamespacedService({ namespace, ...page })
        : core.listServiceForAllNamespaces(page);
    }
    if (kind === 'EndpointSlice') {
      return namespace
        ? discovery.listNamespacedEndpointSlice({ namespace, ...page })
        : discovery.listEndpointSliceForAllNamespaces(page);
    }
    const { group, version, plural } = KINDS[kind];
    return namespace
      ? custom.listNamespacedCustomObject({ group, version, plural, namespace, ...page })
      : custom.listCustomObjectForAllNamespaces({
          group,
          version,
          resourcePlural: plural,
          ...page,
        });
  }

  return {
    watch,
    async list(kind, options = {}) {
      const items: KubeObject[] = [];
      let cont: string | undefined;
      do {
        let page: KubeList;
        try {
          page = await listPage(kind, options, cont);
        } catch (error) {
          // 404 on a list is the resource type itself missing: the CRD is not installed.
          if (statusOf(error) === 404) throw new KindNotInstalledError(kind, apiVersionOf(kind));
          throw toClusterError(error, `list ${kind}`);
        }
        for (const item of page.items ?? []) items.push(plain(kind, item));
        cont = page.metadata?._continue ?? page.metadata?.continue ?? undefined;
      } while (cont);
      return items;
    },

    async get(kind, ref) {
      try {
        return plain(kind, await read(kind, ref));
      } catch (error) {
        if (statusOf(error) === 404) {
          // A missing object's 404 names it (Status details.name); a 404 without that is the
          // resource type itself not served: its CRD is not installed.
          const status = parseStatus((error as ApiException<unknown>).body);
          if (status?.details?.name === ref.name) return undefined;
          throw new KindNotInstalledError(kind, apiVersionOf(kind));
        }
        throw toClusterError(error, `get ${kind} ${ref.namespace}/${ref.name}`);
      }
    },

    create: (kind, object) =>
      write(kind, object, 'create', () => {
        const namespace = object.metadata.namespace;
        if (kind === 'EndpointSlice')
          return discovery.createNamespacedEndpointSlice({ namespace, body: slice(object) });
        if (kind === 'Service') throw new Error('the projector never writes Services');
        return custom.createNamespacedCustomObject({
          ...coordinates(kind),
          namespace,
          body: object,
        });
      }),

    replace: (kind, object) =>
      write(kind, object, 'replace', () => {
        const { namespace, name } = object.metadata;
        if (kind === 'EndpointSlice') {
          return discovery.replaceNamespacedEndpointSlice({ namespace, name, body: slice(object) });
        }
        if (kind === 'Service') throw new Error('the projector never writes Services');
        return custom.replaceNamespacedCustomObject({
          ...coordinates(kind),
          namespace,
          name,
          body: object,
        });
      }),

    replaceStatus: (kind, object) =>
      write(kind, object, 'replace status of', () => {
        const { namespace, name } = object.metadata;
        if (kind === 'EndpointSlice' || kind === 'Service')
          throw new Error(`the projector never writes ${kind} status`);
        return custom.replaceNamespacedCustomObjectStatus({
          ...coordinates(kind),
          namespace,
          name,
          body: object,
        });
      }),

    async delete(kind, object) {
      const { namespace, name, uid, resourceVersion } = object.metadata;
      // Preconditions: delete only the object as it was read, not one changed or recreated since.
      const body = { preconditions: { uid, resourceVersion } };
      try {
        if (kind === 'EndpointSlice')
          await discovery.deleteNamespacedEndpointSlice({ namespace, name, body });
        else if (kind === 'Service') throw new Error('the projector never deletes Services');
        else
          await custom.deleteNamespacedCustomObject({
            ...coordinates(kind),
            namespace,
            name,
            body,
          });
        return 'deleted';
      } catch (error) {
        const status = statusOf(error);
        if (status === 404) return 'gone';
        if (status === 409) return 'conflict';
        throw toClusterError(error, `delete ${kind} ${namespace}/${name}`);
      }
    },
  };

  async function watch(
    kind: Kind,
    options: WatchOptions,
    onEvent: (event: WatchEvent) => void,
  ): Promise<ClusterWatch> {
    const { group, version, plural } = KINDS[kind];
    const base = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
    const path = `${base}${options.namespace ? `/namespaces/${options.namespace}` : ''}/${plural}`;
    let finish: (error: Error | undefined) => void = () => {};
    const done = new Promise<Error | undefined>((resolve) => {
      finish = resolve;
    });
    let expired = false;
    const controller = await new Watch(config).watch(
      path,
      {
        labelSelector: options.labelSelector,
        resourceVersion: options.resourceVersion,
        timeoutSeconds: options.timeoutSeconds,
        allowWatchBookmarks: true,
      },
      (type, object) => {
        if (type === 'ERROR') {
          // A Status in the stream: 410 Expired/Gone means the version is too old.
          expired = (object as { code?: number } | undefined)?.code === 410;
          return;
        }
        onEvent({ type: type as WatchEvent['type'], object: plain(kind, object) });
      },
      (error: unknown) => {
        if (expired) finish(new WatchExpiredError(`watch ${kind}: the version is no longer kept`));
        else if (error) finish(toClusterError(error, `watch ${kind}`));
        else finish(undefined);
      },
    );
    return { done, stop: () => controller.abort() };
  }

  function read(kind: Kind, ref: ObjectRef): Promise<unknown> {
    const { namespace, name } = ref;
    if (kind === 'Service') return core.readNamespacedService({ namespace, name });
    if (kind === 'EndpointSlice') return discovery.readNamespacedEndpointSlice({ namespace, name });
    return custom.getNamespacedCustomObject({ ...coordinates(kind), namespace, name });
  }
}

/**
 * What `KubeConfig.makeApiClient` builds, except that every request shares one connection pool.
 * The client creates a new undici Agent (so a new TCP and TLS connection) for every request;
 * a reconcile makes hundreds of requests, so the first Agent is kept and reused. The settings
 * are the same for all of them: same cluster, same user, same TLS options.
 */
function pooledConfiguration(config: KubeConfig): Configuration {
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster; set current-context');
  let shared: ReturnType<typeof sharedDispatcherOf> | undefined;
  const authentication: SecurityAuthentication = {
    getName: () => 'kubeconfig authentication over one connection pool',
    async applySecurityAuthentication(context) {
      // Credentials (a bearer token that may be refreshed, client certificates) still come from
      // the kubeconfig on every request.
      await config.applySecurityAuthentication(context);
      const created = sharedDispatcherOf(context);
      if (!created) return;
      if (shared) {
        context.setDispatcher(shared);
        void created.close();
      } else {
        shared = created;
      }
    },
  };
  return createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: authentication },
  });
}

function sharedDispatcherOf(
  context: Parameters<SecurityAuthentication['applySecurityAuthentication']>[0],
) {
  return context.getDispatcher();
}

interface KubeList {
  items?: unknown[];
  metadata?: { _continue?: string; continue?: string };
}

async function write(
  kind: Kind,
  object: KubeObject,
  verb: string,
  send: () => Promise<unknown>,
): Promise<WriteResult> {
  try {
    return { outcome: 'written', object: plain(kind, await send()) };
  } catch (error) {
    const status = statusOf(error);
    // 409: AlreadyExists on create, a stale resourceVersion on replace. Both mean re-read.
    if (status === 409) return { outcome: 'conflict' };
    if (status === 404 && verb !== 'create') return { outcome: 'gone' };
    throw toClusterError(
      error,
      `${verb} ${kind} ${object.metadata.namespace}/${object.metadata.name}`,
    );
  }
}

function coordinates(kind: Kind) {
  const { group, version, plural } = KINDS[kind];
  return { group, version, plural };
}

/** The typed client wants its model class; the JSON is the same. */
function slice(object: KubeObject): V1EndpointSlice {
  return object as unknown as V1EndpointSlice;
}

/**
 * Plain JSON with apiVersion and kind set: typed responses hold Date objects and class
 * instances, and list items of built-in kinds come without apiVersion/kind.
 */
function plain(kind: Kind, value: unknown): KubeObject {
  const object = JSON.parse(JSON.stringify(value)) as KubeObject;
  object.apiVersion = apiVersionOf(kind);
  object.kind = kind;
  return object;
}

function statusOf(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

/** The API server's Status message (e.g. 422's field errors), with what was being done. */
function toClusterError(error: unknown, doing: string): ClusterError {
  if (!(error instanceof ApiException)) return new ClusterError(`${doing}: ${failure(error)}`, 0);
  const status = parseStatus(error.body);
  const reason = status?.reason;
  const detail = status?.message ?? (typeof error.body === 'string' ? error.body : error.message);
  return new ClusterError(
    `${doing}: the API server answered ${error.code}${reason ? ` ${reason}` : ''}: ${detail}`,
    error.code,
    reason,
  );
}

/**
 * fetch's own message is only `fetch failed`; why (connection refused, no such host, a TLS
 * certificate the kubeconfig does not trust) is in its cause: `fetch failed (connect
 * ECONNREFUSED 127.0.0.1:6443)`.
 */
function failure(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause;
  if (!(cause instanceof Error)) return error.message;
  // Several addresses tried (IPv4 and IPv6): an AggregateError with an empty message.
  const first = cause instanceof AggregateError ? cause.errors[0] : undefined;
  const why = cause.message || (first instanceof Error ? first.message : '') || String(cause.name);
  return `${error.message} (${why})`;
}

/** The API server's Status object, as far as the projector reads it. */
interface ApiStatus {
  message?: string;
  reason?: string;
  details?: { name?: string };
}

function parseStatus(body: unknown): ApiStatus | undefined {
  if (body && typeof body === 'object') return body as ApiStatus;
  if (typeof body !== 'string') return undefined;
  try {
    return JSON.parse(body) as ApiStatus;
  } catch {
    return undefined;
  }
}
