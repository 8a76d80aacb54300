import { sweeperSizing } from '../infra/constructs/sweeper-sizing.ts';
import { buildRegistration } from '../lib/domain/build-entry.ts';
import { entryOrigin } from '../lib/domain/entry-name.ts';
import { HEARTBEAT_ANNOTATIONS, type Heartbeat } from '../lib/domain/heartbeat.ts';
import type { WorkloadGroup } from '../lib/domain/model.ts';
import type { RegistrarStore } from '../lib/registrar-store.ts';
import { createDynamoDbClient, documentClientFor } from '../lib/store/dynamodb-client.ts';
import { ensureTable } from '../lib/store/ensure-table.ts';
import { composeRegistry } from '../lib/wiring/registry.ts';
import { benchGroup, benchIp, inBatches } from './bench-entries.ts';
import { startDynaliteProcess } from './dynalite-process.ts';
import { startManagementApiStandIn } from './management-api-stand-in.ts';
import { sweeperRunner } from './sweeper-runner.ts';

export interface TenantPaceRow {
  scenario: string;
  /** Holder checks (GET @connections) one scheduled run made, by namespace. */
  shopChecks: number;
  evilChecks: number;
  /** The run's wall time (it stays up between passes while a group needs them). */
  runWallMs: number;
}

/**
 * Issue 44: the checks one scheduled sweeper run makes per namespace, with and without another
 * tenant's short heartbeat. `shop` has `shopVms` VMs in a `60s x 3` group; then `evil` adds
 * `evilVms` VMs in a `5s x 2` group. The deployed sweeper handler (functions/sweeper.ts, the
 * DynamoDB adapter, the management API over HTTP) against the bench's stand-in of API
 * Gateway's management API (25 ms a call), dynalite in a process of its own; each run is a
 * real-time invocation with Lambda's deadline (its passes end 45 s into its minute). Checks are
 * counted at the stand-in, by the namespace the connection id names.
 */
export async function measureTenantPace(shopVms = 1_000, evilVms = 1): Promise<TenantPaceRow[]> {
  const dynamo = await startDynaliteProcess();
  const raw = createDynamoDbClient({ region: 'us-east-1', endpoint: dynamo.endpoint });
  const standIn = await startManagementApiStandIn(25);
  try {
    await ensureTable(raw, 'bench');
    const client = documentClientFor(raw);
    const store = composeRegistry(client, 'bench');
    const sweeper = sweeperRunner({
      client,
      tableName: 'bench',
      connectionsUrl: standIn.url,
      timeoutS: sweeperSizing({ sweepRateMinutes: 1 }).timeoutS,
    });
    const slow = { intervalMs: 60_000, misses: 3 };
    const fast = { intervalMs: 5_000, misses: 2 };
    const shop = await groupOf(store, 'shop', 'web', slow);
    const seen = Date.now() - 10 * 60_000;
    await sweeper.run(seen);
    await connectAll(store, shop, 'shop', 0, shopVms, seen + 1_000, slow);
    const count = async (at: number, scenario: string): Promise<TenantPaceRow> => {
      await standIn.checkedSince();
      const run = await sweeper.run(at);
      const asked = await standIn.checkedSince();
      return {
        scenario,
        shopChecks: asked.filter((id) => id.startsWith('shop-')).length,
        evilChecks: asked.filter((id) => id.startsWith('evil-')).length,
        runWallMs: Math.round(run.wallMs),
      };
    };
    const alone = await count(seen + 2 * 60_000, `shop ${shopVms} VMs of 60s x 3, alone`);
    const evil = await groupOf(store, 'evil', 'spam', fast);
    await connectAll(store, evil, 'evil', 0, evilVms, seen + 2 * 60_000 + 1_000, fast);
    // The run after evil's group is listed (a change of its heartbeat is listed at once).
    const beside = await count(seen + 3 * 60_000, `beside evil ${evilVms} VM(s) of 5s x 2`);
    return [alone, beside];
  } finally {
    await standIn.close();
    raw.destroy();
    await dynamo.close();
  }
}

async function groupOf(
  store: RegistrarStore,
  namespace: string,
  name: string,
  heartbeat: Heartbeat,
): Promise<WorkloadGroup> {
  const group = benchGroup(namespace);
  group.metadata.name = name;
  group.metadata.annotations = {
    [HEARTBEAT_ANNOTATIONS.interval]: `${heartbeat.intervalMs}ms`,
    [HEARTBEAT_ANNOTATIONS.misses]: String(heartbeat.misses),
  };
  await store.applyGroup(group);
  return group;
}

/**
 * `count` VMs of the group as `$connect` records them: an agent of 0.3, told the group's
 * heartbeat (the holder's record, when this tree has one; a tree before it records none).
 */
async function connectAll(
  store: RegistrarStore,
  group: WorkloadGroup,
  namespace: string,
  from: number,
  count: number,
  connectedAt: number,
  heartbeat: Heartbeat,
): Promise<void> {
  const told = await import('../lib/domain/holder-heartbeat.ts').catch(() => undefined);
  const name = group.metadata.name;
  await inBatches(count, 64, async (k) => {
    const i = from + k;
    const ip = benchIp(i);
    const built = buildRegistration(
      group,
      { group: name, namespace, ips: [ip], labels: {} },
      connectedAt,
    );
    await store.connect({
      ...built,
      origin: entryOrigin(name, ip),
      mayCreate: true,
      recordConnection: false,
      groupGeneration: 1,
      connectionId: `${namespace}-${i}`,
      connectedAt,
      controller: 'bench',
      identity: { principal: `token:${namespace}`, namespace },
      agentVersion: '0.3.0',
      ...(told ? { heartbeat: told.toldAtConnect(heartbeat, '0.3.0', connectedAt) } : {}),
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(
    JSON.stringify(
      await measureTenantPace(Number(process.argv[2] ?? 1_000), Number(process.argv[3] ?? 1)),
      null,
      2,
    ),
  );
}
