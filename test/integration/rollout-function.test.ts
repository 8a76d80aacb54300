import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRolloutHandler, type RolloutDependencies } from '../../functions/rollout.ts';
import { readRolloutConfig } from '../../lib/rollout/rollout-config.ts';
import { DynamoDbGroupSource } from '../../lib/store/dynamodb-group-source.ts';
import { composeRollouts } from '../../lib/wiring/rollouts.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';
import { lambdaContext } from '../fixtures/lambda-context.ts';
import { instrumented } from '../fixtures/rollout-bed.ts';

/**
 * The rollout function's handler over real dynalite: it records where groups come from (the
 * CLI reads it), and one run at a time holds the rollouts.
 */
let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

const GROUP = `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: web, namespace: shop}
spec: {template: {ports: {http: 8080}}}
`;

async function handlerFor(
  env: Record<string, string>,
  overrides: Partial<RolloutDependencies> = {},
) {
  const { client, tableName, store } = await freshRegistry(dynamo.endpoint, 'rollout-fn');
  const deps: RolloutDependencies = {
    rollouts: composeRollouts(client, tableName),
    catalog: store,
    groupSource: new DynamoDbGroupSource(client, tableName),
    config: readRolloutConfig(env),
    now: () => Date.now(),
    sleep: async () => {},
    ...overrides,
  };
  const cli = (args: string[], stdin = '') =>
    captureCli(args, {
      env: { REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint, REGISTRAR_TABLE: tableName },
      stdin,
    });
  return { handler: createRolloutHandler(deps), deps, cli, client, tableName };
}

describe('the rollout function', () => {
  it('records groups from the cluster, after which registrar apply of a group refuses; back to the registry, it applies', async () => {
    const { handler, cli, client, tableName } = await handlerFor({
      REGISTRAR_GROUP_SOURCE: 'cluster',
      REGISTRAR_GROUP_SELECTOR: 'registrar=on',
    });
    expect(await cli(['apply', '-f', '-'], GROUP)).toMatchObject({ code: 0 });
    expect((await handler({}, lambdaContext('rollout'))).mode).toBe('ran');
    const refused = await cli(['apply', '-f', '-'], GROUP);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      'groups come from the Kubernetes cluster (the registrar syncs its WorkloadGroups labelled registrar=on)',
    );
    // A deploy back to groups from the registry: its first run records it.
    const source = new DynamoDbGroupSource(client, tableName);
    expect(await source.record({ kind: 'registry' }, Date.now())).toBe('recorded');
    expect(await cli(['apply', '-f', '-'], GROUP)).toMatchObject({ code: 0 });
  });

  it('does nothing while another run holds the lease', async () => {
    let release: () => void = () => {};
    const holding = new Promise<void>((resolve) => {
      release = resolve;
    });
    let inside: () => void = () => {};
    const entered = new Promise<void>((resolve) => {
      inside = resolve;
    });
    const { handler, deps } = await handlerFor({});
    const slow = instrumented(deps.rollouts, {
      listRollouts: async () => {
        inside();
        await holding;
        return deps.rollouts.listRollouts();
      },
    });
    const slowHandler = createRolloutHandler({ ...deps, rollouts: slow });
    const first = slowHandler({}, lambdaContext('rollout'));
    // The first run took the lease and waits inside; a tick now skips.
    await entered;
    expect((await handler({}, lambdaContext('rollout'))).mode).toBe('skipped');
    release();
    expect((await first).mode).toBe('ran');
    // Released at the end: the next tick runs.
    expect((await handler({}, lambdaContext('rollout'))).mode).toBe('ran');
  });
});
