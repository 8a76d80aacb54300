import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { sweeperSizing } from '../infra/constructs/sweeper-sizing.ts';
import { createJoinToken } from '../lib/auth/join-token.ts';
import { ENV, readConfig } from '../lib/config.ts';
import type { ObjectRef } from '../lib/domain/model.ts';
import { ManagementApiLiveness } from '../lib/gateway/management-api-liveness.ts';
import type { RegistrarStore } from '../lib/registrar-store.ts';
import { createDynamoDbClient, documentClientFor } from '../lib/store/dynamodb-client.ts';
import { DynamoDbTokenStore } from '../lib/store/dynamodb-token-store.ts';
import { composeRegistry } from '../lib/wiring/registry.ts';
import { NO_CAPABILITIES } from '../test/fixtures/no-capabilities.ts';
import { benchGroup, benchIp, connectBenchVm, inBatches } from './bench-entries.ts';
import { GatewayPath } from './gateway-path.ts';
import type { ManagementApiStandIn } from './management-api-stand-in.ts';
import { type SweeperRun, sweeperRunner } from './sweeper-runner.ts';

export const MINUTE = 60_000;
/** The deployed sweeper's Lambda timeout at the default 1-minute schedule. */
export const SWEEPER_TIMEOUT_S = sweeperSizing({ sweepRateMinutes: 1 }).timeoutS;

/** One benchmark VM: its entry, the connection that holds it now, and its zone. */
export interface BenchVm {
  index: number;
  ref: ObjectRef;
  connectionId: string;
  connectedAt: number;
  locality?: string;
  /** Out of the rotation: crashed, or left on purpose. */
  gone?: boolean;
}

export interface NamespacePlan {
  namespace: string;
  vms: number;
  /** Zones (`region/zone`) the namespace's VMs claim in turn; none: no locality. */
  zones?: readonly string[];
}

/** A sweeper run as measured, with the requests it made and its management API calls. */
export interface MeasuredRun extends SweeperRun {
  run: number;
  queries: number;
  itemsRead: number;
  writes: number;
  managementCalls: number;
  /** The connections the run's liveness checks asked API Gateway about. */
  checkedIds: string[];
}

/**
 * A fleet in a registry table at simulated time: seeded through the store (the connect write
 * the handler makes), then run minute by minute: rotations through the real `$connect` /
 * `$disconnect` handlers, then the deployed sweeper handler against the management API
 * stand-in, measured.
 */
export class BenchFleet {
  readonly vms: BenchVm[] = [];
  readonly store: RegistrarStore;
  readonly gateway: GatewayPath;
  readonly runs: MeasuredRun[] = [];
  readonly #tokens: Record<string, string> = {};
  readonly #client: DynamoDBDocumentClient;
  readonly #sweeper;
  readonly #counted: RequestTally;
  readonly #standIn: ManagementApiStandIn;

  readonly tableName: string;
  readonly start: number;

  readonly #raw: DynamoDBClient[];

  /** A fleet in table `tableName` of the DynamoDB at `endpoint`, with clients of its own. */
  constructor(endpoint: string, tableName: string, standIn: ManagementApiStandIn, start: number) {
    this.tableName = tableName;
    this.start = start;
    const raw = createDynamoDbClient({ region: 'us-east-1', endpoint });
    // The sweeper has a client of its own, counted lightly (no copies of the requests).
    const sweeperRaw = createDynamoDbClient({ region: 'us-east-1', endpoint });
    this.#raw = [raw, sweeperRaw];
    const client = documentClientFor(raw);
    this.#client = client;
    this.store = composeRegistry(client, tableName);
    this.#standIn = standIn;
    let now = start;
    this.gateway = new GatewayPath(gatewayDeps(client, tableName, standIn.url, () => now));
    this.setNow = (at) => {
      now = at;
    };
    const sweeperClient = documentClientFor(sweeperRaw);
    this.#counted = tally(sweeperClient);
    this.#sweeper = sweeperRunner({
      client: sweeperClient,
      tableName,
      connectionsUrl: standIn.url,
      timeoutS: SWEEPER_TIMEOUT_S,
      env: { [ENV.sweepMaxDeletes]: String(sweeperSizing({ sweepRateMinutes: 1 }).maxDeletes) },
    });
  }

  /** The client the fleet's store writes with (uncounted). */
  get client(): DynamoDBDocumentClient {
    return this.#client;
  }

  close(): void {
    for (const raw of this.#raw) raw.destroy();
  }

  /** Moves the clock the handlers read. */
  readonly setNow: (at: number) => void;

  /** Applies each namespace's group and a join token, and connects its VMs through the store. */
  async seed(plans: readonly NamespacePlan[], connectedAt: (i: number) => number): Promise<void> {
    const tokens = new DynamoDbTokenStore(this.#client, this.tableName);
    for (const plan of plans) {
      await this.store.applyGroup(benchGroup(plan.namespace));
      const { token, stored } = createJoinToken({
        namespace: plan.namespace,
        ttlMs: 24 * 60 * MINUTE,
        now: this.start - 3 * 60 * MINUTE,
      });
      await tokens.putToken(stored);
      this.#tokens[plan.namespace] = token;
      for (let k = 0; k < plan.vms; k++) {
        const index = this.vms.length;
        const zone = plan.zones?.[k % plan.zones.length];
        this.vms.push({
          index,
          ref: { namespace: plan.namespace, name: '' },
          connectionId: `c${index}`,
          connectedAt: connectedAt(index),
          ...(zone ? { locality: `${zone}/rack-1` } : {}),
        });
      }
    }
    await inBatches(this.vms.length, 64, async (i) => {
      const vm = this.vms[i] as BenchVm;
      const { entry } = await connectBenchVm(
        this.store,
        i,
        vm.connectedAt,
        vm.ref.namespace,
        vm.locality,
      );
      vm.ref = entry;
      this.gateway.adopt(vm.connectionId, vm.connectedAt, entry.namespace, entry.name);
    });
  }

  /** The VM's connection closes (through `$disconnect`): 1000 clean, 1006 no close frame. */
  async leave(vm: BenchVm, at: number, code: 1000 | 1006): Promise<void> {
    vm.gone = true;
    this.setNow(at);
    await this.gateway.disconnect(vm.connectionId, at, code);
  }

  /** The VM crashes and its `$disconnect` is lost: only a liveness check can find it. */
  async loseDisconnect(vms: readonly BenchVm[]): Promise<void> {
    for (const vm of vms) vm.gone = true;
    await this.#standIn.markGone(vms.map((vm) => vm.connectionId));
  }

  /**
   * One simulated minute: ~1/108 of the live VMs rotate (each agent reconnects every 90-108
   * minutes) through `$connect` and the old connection's `$disconnect`, then one sweeper run.
   * `due` picks the VMs that rotate this minute instead (a schedule by connection age).
   */
  async minute(
    run: number,
    now: number,
    rotated: Map<string, number>,
    due?: (vm: BenchVm) => boolean,
  ): Promise<MeasuredRun> {
    this.setNow(now - 1_000);
    const live = this.vms.length;
    const picked = due
      ? this.vms.filter((vm) => !vm.gone && due(vm))
      : Array.from({ length: Math.ceil(live / 108) }, (_, k) => this.vms[(k * 108 + run) % live]);
    let refused = 0;
    await inBatches(picked.length, 32, async (k) => {
      const vm = picked[k];
      if (!vm || vm.gone) return;
      const old = vm.connectionId;
      vm.connectionId = `c${vm.index}-r${run}`;
      vm.connectedAt = now - 1_000;
      const status = await this.gateway.rotate(
        {
          connectionId: vm.connectionId,
          namespace: vm.ref.namespace,
          group: 'bench',
          ip: benchIp(vm.index),
          token: this.#tokens[vm.ref.namespace] ?? '',
          ...(vm.locality ? { locality: vm.locality } : {}),
        },
        old,
        now - 1_000,
      );
      if (status !== 200) refused += 1;
      if (!rotated.has(old)) rotated.set(old, run);
    });
    if (refused > 0) throw new Error(`${refused} rotations refused by $connect`);
    this.setNow(now);
    await this.#standIn.checkedSince(); // the rotations' own checks of the other holder
    const callsBefore = await this.#standIn.calls();
    this.#counted.reset();
    const measured = await this.#sweeper.run(now);
    const calls = (await this.#standIn.calls()) - callsBefore;
    const checkedIds = await this.#standIn.checkedSince();
    const entry: MeasuredRun = {
      ...measured,
      run,
      queries: this.#counted.queries,
      itemsRead: this.#counted.items,
      writes: this.#counted.writes,
      managementCalls: calls,
      checkedIds,
    };
    this.runs.push(entry);
    return entry;
  }
}

/** The functions' dependencies for the `$connect` / `$disconnect` handlers. */
function gatewayDeps(
  client: DynamoDBDocumentClient,
  tableName: string,
  connectionsUrl: string,
  now: () => number,
): ConstructorParameters<typeof GatewayPath>[0] {
  const config = readConfig({ [ENV.tableName]: tableName, [ENV.connectionsUrl]: connectionsUrl });
  return {
    ...NO_CAPABILITIES,
    config,
    store: composeRegistry(client, tableName),
    tokens: new DynamoDbTokenStore(client, tableName),
    liveness: new ManagementApiLiveness({
      endpoint: connectionsUrl,
      region: config.region,
      local: true,
    }),
    now,
  };
}

interface RequestTally {
  queries: number;
  items: number;
  writes: number;
  reset(): void;
}

/** Counts a client's requests by kind and the items its queries read, copying nothing. */
function tally(client: DynamoDBDocumentClient): RequestTally {
  const counts: RequestTally = {
    queries: 0,
    items: 0,
    writes: 0,
    reset() {
      counts.queries = 0;
      counts.items = 0;
      counts.writes = 0;
    },
  };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      const command = String(context.commandName);
      if (command === 'QueryCommand') {
        counts.queries += 1;
        counts.items += Number((result.output as { ScannedCount?: number }).ScannedCount ?? 0);
      } else if (/^(Put|Update|Delete)ItemCommand$/.test(command)) counts.writes += 1;
      return result;
    },
    { step: 'initialize', name: 'benchTally' },
  );
  return counts;
}
