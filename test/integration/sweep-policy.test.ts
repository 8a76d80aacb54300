import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSweeperHandler } from '../../functions/sweeper.ts';
import { readConfig } from '../../lib/config.ts';
import type { Dependencies } from '../../lib/dependencies.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import {
  DynamoDbSweepPolicyStore,
  SWEEP_POLICY_KEY,
} from '../../lib/store/dynamodb-sweep-policy-store.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { countRequests, type RequestCounter } from '../../lib/store/request-counter.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { lambdaContext } from '../fixtures/lambda-context.ts';
import { NO_CAPABILITIES } from '../fixtures/no-capabilities.ts';
import { sweeperRecordsInMemory } from '../fixtures/sweep-stand-ins.ts';

/**
 * One policy, one place: the registrar's sweeper records the policy it applies, and the CLI's
 * manual sweep applies that one, not its own defaults (the report: an operator's `sweep`
 * deleted an entry disconnected 6 minutes ago on a registrar configured with a 1 h grace).
 */

const NOW = Date.parse('2026-03-01T12:00:00Z');
const MINUTE = 60_000;
let dynamo: TestDynamo;
let store: RegistrarStore;
let policies: DynamoDbSweepPolicyStore;
let counter: RequestCounter;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  counter = countRequests(dynamo.client);
  store = composeRegistry(dynamo.client, dynamo.tableName);
  policies = new DynamoDbSweepPolicyStore(dynamo.client, dynamo.tableName);
});
afterAll(async () => {
  await dynamo?.close();
});

const POLICY = {
  gracePeriodMs: 60 * MINUTE,
  maxConnectionAgeMs: 120 * MINUTE,
  livenessIntervalMs: 5 * MINUTE,
  sweepIntervalMs: MINUTE,
};

function registrar(args: string[]) {
  return captureCli(args, {
    env: { REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint, REGISTRAR_TABLE: dynamo.tableName },
    now: () => NOW,
  });
}

describe('the recorded sweep policy', () => {
  it('is absent until the registrar records it, then read back as written', async () => {
    expect(await policies.read()).toBeUndefined();
    expect(await policies.record(POLICY, NOW)).toBe('recorded');
    expect(await policies.read()).toEqual({ ...POLICY, recordedAt: NOW });
  });

  it('costs one read and no write when the policy has not changed', async () => {
    counter.reset();
    expect(await policies.record(POLICY, NOW + MINUTE)).toBe('unchanged');
    expect(counter.counts()).toEqual({ GetItem: 1 });
    expect((await policies.read())?.recordedAt).toBe(NOW);
  });

  it('is replaced when the configuration changes', async () => {
    const longer = { ...POLICY, gracePeriodMs: 90 * MINUTE };
    expect(await policies.record(longer, NOW + 2 * MINUTE)).toBe('recorded');
    expect(await policies.read()).toEqual({ ...longer, recordedAt: NOW + 2 * MINUTE });
  });

  it('is written by every sweeper run with the configuration the sweeper applies', async () => {
    const deps: Dependencies = {
      ...NO_CAPABILITIES,
      config: readConfig({
        REGISTRAR_TABLE: dynamo.tableName,
        REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint,
        REGISTRAR_GRACE_PERIOD: '1h',
        REGISTRAR_LIVENESS_INTERVAL: '10m',
      }),
      store,
      tokens: new DynamoDbTokenStore(dynamo.client, dynamo.tableName),
      ...sweeperRecordsInMemory(),
      sweepPolicy: policies,
      now: () => NOW + 3 * MINUTE,
    };
    await createSweeperHandler(deps)({}, lambdaContext('sweeper'));
    expect(await policies.read()).toEqual({
      gracePeriodMs: 60 * MINUTE,
      maxConnectionAgeMs: 120 * MINUTE,
      livenessIntervalMs: 10 * MINUTE,
      sweepIntervalMs: MINUTE,
      authMode: 'token',
      recordedAt: NOW + 3 * MINUTE,
    });
  });

  it("makes a manual sweep apply the registrar's grace period, not the CLI's 5 m default", async () => {
    await store.connect({
      entry: {
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadEntry',
        metadata: { name: 'web-10-0-0-7', namespace: 'shop' },
        spec: { address: '10.0.0.7', ports: { http: 8080 } },
      },
      autoRegistrationGroup: 'web',
      origin: 'test-origin',
      mayCreate: true,
      recordConnection: false,
      healthChecksEnabled: false,
      groupGeneration: 1,
      connectionId: 'conn-1',
      connectedAt: NOW - 30 * MINUTE,
      controller: 'workload-registrar',
      identity: { principal: 'token:abc123', namespace: 'shop' },
    });
    await store.leave({
      connectionId: 'conn-1',
      entry: { namespace: 'shop', name: 'web-10-0-0-7' },
      at: NOW - 6 * MINUTE,
    });

    const manual = await registrar(['sweep', '--dry-run']);
    expect(manual.code).toBe(0);
    // The result is on stdout, also when nothing is due (it once went to stderr alone).
    expect(manual.stdout).toMatch(/grace period 1h, .*\(the registrar's, recorded /);
    // "0 would be deleted" says why the disconnected entry stays, and until when.
    expect(manual.stdout).toMatch(
      /^0 would be deleted; .*; 1 departed entry within its grace period, the first due in 54m; /,
    );

    const describe = await registrar(['describe', 'we', 'web-10-0-0-7', '-n', 'shop']);
    expect(describe.stdout).toMatch(/Sweep Policy: +grace period 1h, stale after 1\.5 x 2h/);

    // An operator may still choose another policy for one run, explicitly.
    const explicit = await registrar(['sweep', '--dry-run', '--grace-period', '5m']);
    expect(explicit.stdout).toMatch(/"web-10-0-0-7" would be deleted/);
    expect(explicit.stdout).toMatch(/\(set by flags\)/);
    expect(explicit.stdout).not.toContain('within');
  });

  it('lives in the CONFIG partition the sweeper is granted', () => {
    expect(SWEEP_POLICY_KEY).toEqual({ pk: 'CONFIG', sk: 'sweep-policy' });
  });
});
