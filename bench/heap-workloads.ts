import { createConnectHandler } from '../functions/connect.ts';
import { createDisconnectHandler } from '../functions/disconnect.ts';
import {
  type AuthorizerContext,
  authorizerEvent,
  connectEvent,
  disconnectEvent,
  gatewayId,
  lambdaContext,
  messageEvent,
  requestContext,
  type UpgradeRequest,
} from '../infra/local/gateway-events.ts';
import { createJoinToken } from '../lib/auth/join-token.ts';
import { dependenciesFromEnv } from '../lib/dependencies.ts';
import type { WorkloadGroup } from '../lib/domain/model.ts';
import { carriedEntryContext, requestedEntry } from '../lib/protocol/carried-entry.ts';
import { parseConnectRequest } from '../lib/protocol/connect-request.ts';
import { authorizerContext, tokenPrincipal } from '../lib/protocol/identity.ts';
import { ROLLOUT_PACE_ANNOTATION } from '../lib/rollout/rollout-pace.ts';
import type { BundledFunction } from './bundle-size.ts';
import type { ManagementApiStandIn } from './management-api-stand-in.ts';

/**
 * What bench/handler-heap.ts invokes each function with: the events of one function's warm
 * container, and the work in the bench's own process (the source `$connect` and `$disconnect`,
 * template changes, the management API stand-in's word) that makes those events realistic.
 */

export const HEAP_FUNCTIONS = [
  'authorize',
  'connect',
  'disconnect',
  'message',
  'sweeper',
  'ec2StateChange',
  'rollout',
  'meshIdentity',
] as const satisfies readonly BundledFunction[];

export type HeapFunction = (typeof HEAP_FUNCTIONS)[number];

export const API = { apiId: 'heap', stage: 'local', region: 'us-east-1' };
const NAMESPACE = 'bench';
const GROUP = 'web';

/** A workload: the store made ready for a batch, and the batch's events. */
export interface Workload {
  setup?(): Promise<void>;
  batch(size: number): Promise<unknown[]>;
  after?(): Promise<void>;
  /** The function answers every event with a refusal (mesh identity with no cluster). */
  expectRefusal?: boolean;
}

interface Connection {
  vm: number;
  id: string;
  request: UpgradeRequest;
  authorizer: AuthorizerContext;
  connectedAt: number;
  described: boolean;
  healthy: boolean;
}

/**
 * VMs of one namespace and group, in three zones, each with its own address, and the source
 * handlers that connect and disconnect them in this process.
 */
export class Fleet {
  readonly #tokenContext: Record<string, string>;
  readonly #token: string;
  readonly #connect: ReturnType<typeof createConnectHandler>;
  readonly #disconnect: ReturnType<typeof createDisconnectHandler>;
  readonly #store: ReturnType<typeof dependenciesFromEnv>['store'];
  readonly management: ManagementApiStandIn;
  #nextVm = 0;

  private constructor(
    token: string,
    tokenContext: Record<string, string>,
    deps: ReturnType<typeof dependenciesFromEnv>,
    management: ManagementApiStandIn,
  ) {
    this.#token = token;
    this.#tokenContext = tokenContext;
    this.#connect = createConnectHandler(deps);
    this.#disconnect = createDisconnectHandler(deps);
    this.#store = deps.store;
    this.management = management;
  }

  /** A group (paced to roll out at once, for the rollout function) and a join token. */
  static async seed(
    env: Record<string, string>,
    management: ManagementApiStandIn,
    rolloutAtOnce: boolean,
  ): Promise<Fleet> {
    const deps = dependenciesFromEnv(env);
    await deps.store.applyGroup(group('v1', rolloutAtOnce));
    const { token, stored } = createJoinToken({
      namespace: NAMESPACE,
      ttlMs: 86_400_000,
      now: Date.now(),
    });
    await deps.tokens.putToken(stored);
    return new Fleet(
      token,
      { principalId: tokenPrincipal(stored), ...authorizerContext(stored) },
      deps,
      management,
    );
  }

  newVm(): number {
    this.#nextVm += 1;
    return this.#nextVm;
  }

  /** A new connection of the VM, as API Gateway would describe it (not yet connected). */
  connection(vm: number, connectedAt = Date.now()): Connection {
    const request = upgrade(this.#token, vm);
    const authorizer: AuthorizerContext = {
      principalId: this.#tokenContext.principalId ?? NAMESPACE,
      integrationLatency: 1,
      ...this.#tokenContext,
      ...carriedEntryContext(
        requestedEntry(
          parseConnectRequest({
            queryStringParameters: request.query,
            multiValueQueryStringParameters: request.multiValueQuery,
          }),
        ),
      ),
    };
    return {
      vm,
      id: gatewayId(),
      request,
      authorizer,
      connectedAt,
      described: false,
      healthy: true,
    };
  }

  authorizerEvent(c: Connection): unknown {
    return authorizerEvent(API, c.request, this.#context(c, 'CONNECT', '$connect', c.connectedAt));
  }

  connectEvent(c: Connection): unknown {
    return connectEvent(c.request, this.#context(c, 'CONNECT', '$connect', c.connectedAt));
  }

  /** A clean close (the agent stopping: 1000) by default; 1006 is a dropped link. */
  disconnectEvent(c: Connection, at = Date.now(), code = 1000): unknown {
    const context = this.#context(c, 'DISCONNECT', '$disconnect', at);
    context.disconnectStatusCode = code;
    context.disconnectReason = '';
    return disconnectEvent(context);
  }

  /** The agent's next message: `describe` first on a new connection, then health reports that flip. */
  messageEvent(c: Connection, at = Date.now()): unknown {
    const body = c.described
      ? JSON.stringify({
          action: 'health',
          healthy: c.healthy,
          ...(c.healthy ? {} : { message: 'probe failed: connection refused' }),
        })
      : JSON.stringify({ action: 'describe' });
    if (c.described) c.healthy = !c.healthy;
    c.described = true;
    const route = JSON.parse(body).action as string;
    return messageEvent(this.#context(c, 'MESSAGE', route, at), body, false);
  }

  sidecarEvent(c: Connection, at = Date.now()): unknown {
    return messageEvent(
      this.#context(c, 'MESSAGE', 'sidecar', at),
      JSON.stringify({ action: 'sidecar' }),
      false,
    );
  }

  /** Registers the connection through the source `$connect` (this process, not counted). */
  async connect(c: Connection): Promise<void> {
    const result = await this.#connect(
      this.connectEvent(c) as never,
      lambdaContext('source-connect', API.region, 10_000),
    );
    if (result.statusCode !== 200) throw new Error(`connect ${c.vm}: ${JSON.stringify(result)}`);
  }

  async disconnect(c: Connection, at = Date.now(), code = 1000): Promise<void> {
    await this.#disconnect(
      this.disconnectEvent(c, at, code) as never,
      lambdaContext('source-disconnect', API.region, 10_000),
    );
  }

  /** A template change: the rollout function brings the held entries to it. */
  async changeTemplate(version: string): Promise<void> {
    await this.#store.applyGroup(group(version, true));
  }

  #context(c: Connection, type: 'CONNECT' | 'MESSAGE' | 'DISCONNECT', route: string, at: number) {
    return requestContext({
      api: API,
      routeKey: route,
      eventType: type,
      connectionId: c.id,
      connectedAt: c.connectedAt,
      at,
      request: c.request,
      authorizer: c.authorizer,
    });
  }
}

function group(version: string, rolloutAtOnce: boolean): WorkloadGroup {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: {
      name: GROUP,
      namespace: NAMESPACE,
      // The rollout function's runs bring every held entry to a change at once.
      ...(rolloutAtOnce ? { annotations: { [ROLLOUT_PACE_ANNOTATION]: '100%/1s' } } : {}),
    },
    spec: {
      metadata: { labels: { app: GROUP } },
      template: { ports: { http: 8080 }, labels: { version } },
      probe: { tcpSocket: { port: 8080 } },
    },
  };
}

const ZONES = ['us-east-1a', 'us-east-1b', 'us-east-1c'];

/** VM `vm`'s WebSocket upgrade: its own address (10.a.b.c), one of three zones, the join token. */
function upgrade(token: string, vm: number): UpgradeRequest {
  const ip = `10.${Math.floor(vm / 62_500) % 250}.${Math.floor(vm / 250) % 250}.${1 + (vm % 250)}`;
  const locality = `us-east-1/${ZONES[vm % ZONES.length]}`;
  const query = { group: GROUP, namespace: NAMESPACE, ip, locality };
  return {
    method: 'GET',
    path: `/${API.stage}?group=${GROUP}&namespace=${NAMESPACE}&ip=${ip}&locality=${encodeURIComponent(locality)}`,
    headers: { Authorization: `Bearer ${token}`, Host: 'heap.local' },
    multiValueHeaders: { Authorization: [`Bearer ${token}`], Host: ['heap.local'] },
    query,
    multiValueQuery: Object.fromEntries(Object.entries(query).map(([k, v]) => [k, [v]])),
    sourceIp: ip,
    userAgent: 'registrar-agent/0.3.0',
    domainName: 'heap.local',
  };
}

/** EventBridge's scheduled event, as the sweeper's and the rollout's schedules send it. */
function scheduledEvent(): unknown {
  return {
    version: '0',
    id: crypto.randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '000000000000',
    time: new Date().toISOString(),
    region: API.region,
    resources: ['arn:aws:events:us-east-1:000000000000:rule/registrar-schedule'],
    detail: {},
  };
}

/** EventBridge's EC2 state change of an instance that is not a registered VM (most are not). */
function instanceStateEvent(state: 'shutting-down' | 'terminated'): unknown {
  const instanceId = `i-${[...crypto.getRandomValues(new Uint8Array(9))]
    .map((b) => b.toString(16).padStart(2, '0'))
    .join('')
    .slice(0, 17)}`;
  return {
    version: '0',
    id: crypto.randomUUID(),
    'detail-type': 'EC2 Instance State-change Notification',
    source: 'aws.ec2',
    account: '000000000000',
    time: new Date().toISOString(),
    region: API.region,
    resources: [`arn:aws:ec2:us-east-1:000000000000:instance/${instanceId}`],
    detail: { 'instance-id': instanceId, state },
  };
}

/** `fn` over `items`, `limit` at a time: the source handlers' share of a batch, done sooner. */
async function inParallel<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const item = items[next++];
      if (item !== undefined) await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

/**
 * The held connections of `size` VMs, some of them replaced before each batch as agents
 * rotate (make before break: the new connection first, then the old one's clean close), so
 * new connection ids keep arriving at the function. `registered: false` leaves the store out
 * (the mesh identity function refuses before it reads anything).
 */
class HeldPool {
  readonly #fleet: Fleet;
  readonly #size: number;
  readonly #registered: boolean;
  readonly #connections: Connection[] = [];
  #asked = 0;
  #rotated = 0;

  constructor(fleet: Fleet, size: number, registered = true) {
    this.#fleet = fleet;
    this.#size = size;
    this.#registered = registered;
  }

  async fill(): Promise<void> {
    const fresh = Array.from({ length: this.#size }, () =>
      this.#fleet.connection(this.#fleet.newVm()),
    );
    if (this.#registered) await inParallel(fresh, 8, (c) => this.#fleet.connect(c));
    this.#connections.push(...fresh);
  }

  /** Replaces `count` connections; `lost`: the old one's $disconnect never arrives. */
  async rotate(count: number, lost = false): Promise<void> {
    const picks = Array.from({ length: count }, () => this.#rotated++ % this.#size);
    await inParallel(picks, 8, async (index) => {
      const old = this.#connections[index];
      if (!old) return;
      const replacement = this.#fleet.connection(old.vm);
      this.#connections[index] = replacement;
      if (!this.#registered) return;
      await this.#fleet.connect(replacement);
      if (lost) await this.#fleet.management.markGone([old.id]);
      else await this.#fleet.disconnect(old);
    });
  }

  /** The connections take turns. */
  next(): Connection {
    const c = this.#connections[this.#asked++ % this.#connections.length];
    if (!c) throw new Error('the pool is empty: fill() first');
    return c;
  }
}

export function workloadOf(
  name: HeapFunction,
  fleet: Fleet,
  total: number,
  churn: boolean,
): Workload {
  const times = <T>(n: number, make: (i: number) => T) =>
    Array.from({ length: n }, (_, i) => make(i));
  switch (name) {
    case 'authorize': {
      // Each event a VM of a fleet of 500 connecting (a new connection each time).
      const vms = times(500, () => fleet.newVm());
      let i = 0;
      return {
        batch: async (size) =>
          times(size, () => fleet.authorizerEvent(fleet.connection(vms[i++ % vms.length] ?? 1))),
      };
    }
    case 'connect': {
      // A fleet of 300 VMs: the first round registers them, later rounds reconnect them; each
      // connection is closed cleanly after the batch (the source $disconnect).
      const vms = times(300, () => fleet.newVm());
      let i = 0;
      let open: Connection[] = [];
      return {
        batch: async (size) => {
          open = times(size, () => fleet.connection(vms[i++ % vms.length] ?? 1));
          return open.map((c) => fleet.connectEvent(c));
        },
        after: () => inParallel(open, 8, (c) => fleet.disconnect(c)),
      };
    }
    case 'disconnect': {
      // Connections of a fleet of 300 VMs, registered before the batch (the source $connect);
      // one close in four a dropped link (1006: an abnormal departure, fail static counts it).
      const vms = times(300, () => fleet.newVm());
      let i = 0;
      return {
        batch: async (size) => {
          const open = times(size, () => fleet.connection(vms[i++ % vms.length] ?? 1));
          await inParallel(open, 8, (c) => fleet.connect(c));
          return open.map((c, k) =>
            fleet.disconnectEvent(c, Date.now(), k % 4 === 3 ? 1006 : 1000),
          );
        },
      };
    }
    case 'message': {
      // 200 held connections, 10 of them replaced before each batch: a describe from each new
      // one, then health reports that flip. (The message budget remembers each new connection
      // until it holds 10,000: bounded, but growth here; `sidecarChurn` shows the bound.)
      const pool = new HeldPool(fleet, 200);
      return {
        setup: () => pool.fill(),
        batch: async (size) => {
          await pool.rotate(10);
          return times(size, () => fleet.messageEvent(pool.next()));
        },
      };
    }
    case 'sweeper': {
      // 5 held connections (liveness checks every 30 s), one of them lost before each batch
      // (a phantom holder for the checks to find), and VMs that left 6 minutes ago (past the
      // 5-minute grace: the batch's first run deletes them).
      const pool = new HeldPool(fleet, 5);
      return {
        setup: () => pool.fill(),
        batch: async (size) => {
          await pool.rotate(1, true);
          const left = Date.now() - 6 * 60_000;
          const leavers = times(Math.ceil(size / 5), () =>
            fleet.connection(fleet.newVm(), left - 60_000),
          );
          await inParallel(leavers, 8, async (c) => {
            await fleet.connect(c);
            await fleet.disconnect(c, left);
          });
          return times(size, () => scheduledEvent());
        },
      };
    }
    case 'ec2StateChange':
      return {
        batch: async (size) =>
          times(size, (k) => instanceStateEvent(k % 2 === 0 ? 'shutting-down' : 'terminated')),
      };
    case 'rollout': {
      // 20 held entries and a template change before each batch: its first run rolls it out.
      const pool = new HeldPool(fleet, 20);
      let version = 1;
      return {
        setup: () => pool.fill(),
        batch: async (size) => {
          version += 1;
          await fleet.changeTemplate(`v${version}`);
          return times(size, () => scheduledEvent());
        },
      };
    }
    case 'meshIdentity': {
      // No cluster: every ask is refused, after the per-connection budget (10 a minute), which
      // these connections keep: at most 5 asks each. `sidecarChurn`: each ask from a connection
      // of its own, as at a function that serves a large fleet's hourly refreshes: the budget
      // then remembers every one until it holds 10,000 (its bound), and no more.
      const pool = new HeldPool(fleet, churn ? total : Math.max(500, Math.ceil(total / 5)), false);
      return {
        expectRefusal: true,
        setup: () => pool.fill(),
        batch: async (size) => times(size, () => fleet.sidecarEvent(pool.next())),
      };
    }
  }
}
