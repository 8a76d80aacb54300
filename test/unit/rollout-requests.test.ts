import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/config.ts';
import { groupsComeFromClusterMessage, sameGroupSource } from '../../lib/domain/group-source.ts';
import { readRolloutConfig } from '../../lib/rollout/rollout-config.ts';
import { connectAsNewest } from '../../lib/store/dynamodb-entry-writes.ts';
import { groupEntryPrefix, rollOutEntryRequest } from '../../lib/store/dynamodb-rollout-entries.ts';
import { decodeRollout, saveRolloutRequest } from '../../lib/store/dynamodb-rollout-records.ts';
import { connectChange } from '../fixtures/connect-change.ts';

/** The exact DynamoDB requests of the rollout and of the connect's new field, pinned. */
describe("the rollout's entry write", () => {
  it('is one UpdateItem conditional on the revision read and the group', () => {
    const entry = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry' as const,
      metadata: { name: 'web-10.0.0.1', namespace: 'shop', labels: { version: 'v2' } },
      spec: { address: '10.0.0.1', labels: { version: 'v2' } },
    };
    expect(
      rollOutEntryRequest(
        'registry',
        { ref: { namespace: 'shop', name: 'web-10.0.0.1' }, entry, revision: 7 },
        'web',
        entry,
        3,
      ),
    ).toEqual({
      TableName: 'registry',
      Key: { pk: 'NS#shop', sk: 'WE#web-10.0.0.1' },
      UpdateExpression: 'SET #entry = :entry, groupGeneration = :generation ADD revision :one',
      ConditionExpression: 'revision = :revision AND autoRegistrationGroup = :group',
      ReturnValues: 'UPDATED_NEW',
      ExpressionAttributeNames: { '#entry': 'entry' },
      ExpressionAttributeValues: {
        ':entry': entry,
        ':generation': 3,
        ':revision': 7,
        ':group': 'web',
        ':one': 1,
      },
    });
  });

  it("reads a group's entries by their name prefix, unless the group's name is long enough for cut names", () => {
    expect(groupEntryPrefix('web')).toBe('WE#web-');
    expect(groupEntryPrefix('a'.repeat(143))).toBe(`WE#${'a'.repeat(143)}-`);
    expect(groupEntryPrefix('a'.repeat(144))).toBe('WE#');
  });
});

describe("a run's save of its record", () => {
  const record = {
    group: { namespace: 'shop', name: 'web' },
    generation: 3,
    startedAt: 10,
    total: 5,
    updated: 2,
    cursor: 'WE#web-10.0.0.2',
    pass: 1,
    skipped: 0,
    stepStartedAt: 10,
    stepUpdated: 2,
    waiting: 0,
    revision: 4,
  };

  it("sets the run's fields, removes the ones it no longer has, and is conditional on its revision", () => {
    const request = saveRolloutRequest('registry', record);
    expect(request).toMatchObject({
      Key: { pk: 'ROLLOUT', sk: 'shop/web' },
      ConditionExpression: 'revision = :revision',
      ExpressionAttributeValues: expect.objectContaining({
        ':revision': 4,
        ':cursor': 'WE#web-10.0.0.2',
      }),
    });
    expect(request.UpdateExpression).toMatch(
      /^SET #namespace = :namespace, #name = :name, #generation = :generation, /,
    );
    expect(request.UpdateExpression).toMatch(/ REMOVE #completedAt, #recheckAt ADD revision :one$/);
    // The operator's pause and the sync's removal request are never written by a run.
    expect(request.UpdateExpression).not.toMatch(/pausedAt|removal/);
  });

  it('creates the record only where none was saved before (a pause may have made one)', () => {
    expect(saveRolloutRequest('registry', { ...record, revision: 0 }).ConditionExpression).toBe(
      'attribute_not_exists(revision)',
    );
  });

  it('reads back what it saved', () => {
    const values = saveRolloutRequest('registry', record).ExpressionAttributeValues ?? {};
    const item = Object.fromEntries(
      Object.entries(values).map(([key, value]) => [key.slice(1), value]),
    );
    expect(decodeRollout({ ...item, pk: 'ROLLOUT', sk: 'shop/web', revision: 5 })).toEqual({
      ...record,
      revision: 5,
    });
  });
});

describe('the connect write', () => {
  it('records what the agent gave only where the entry has none (a reconnect never changes it)', () => {
    const change = {
      ...connectChange({
        name: 'web-10.0.0.1',
        namespace: 'shop',
        connectionId: 'c1',
        connectedAt: 1,
      }),
      agentGiven: { labels: { rack: 'r1' }, locality: 'eu-west-1/a' },
    };
    const request = connectAsNewest('registry', change);
    expect(request.UpdateExpression).toContain(
      'agentGiven = if_not_exists(agentGiven, :agentGiven)',
    );
    expect(request.ExpressionAttributeValues?.[':agentGiven']).toEqual(change.agentGiven);
  });
});

describe("the rollout function's configuration", () => {
  it('defaults to groups from the registry, 400 writes/s, runs of 2 m and rechecks every 5 m', () => {
    expect(readRolloutConfig({})).toEqual({
      groupSource: { kind: 'registry' },
      writesPerSecond: 400,
      runTimeMs: 120_000,
      recheckMs: 300_000,
    });
    expect(
      readRolloutConfig({ REGISTRAR_GROUP_SOURCE: 'cluster', REGISTRAR_GROUP_SELECTOR: 'a=b' })
        .groupSource,
    ).toEqual({
      kind: 'cluster',
      selector: 'a=b',
    });
  });

  it.each([
    [
      { REGISTRAR_GROUP_SOURCE: 'git' },
      "REGISTRAR_GROUP_SOURCE (value 'git'): must be 'registry' or 'cluster'",
    ],
    [
      { REGISTRAR_GROUP_SELECTOR: 'a=b' },
      "REGISTRAR_GROUP_SELECTOR (value 'a=b'): applies only with REGISTRAR_GROUP_SOURCE=cluster",
    ],
    [
      { REGISTRAR_GROUP_SOURCE: 'cluster', REGISTRAR_GROUP_SELECTOR: 'a;b' },
      'must be a Kubernetes label selector',
    ],
    [
      { REGISTRAR_ROLLOUT_WRITES_PER_SECOND: '5000' },
      "REGISTRAR_ROLLOUT_WRITES_PER_SECOND (value '5000')",
    ],
    [{ REGISTRAR_ROLLOUT_RUN_TIME: '0s' }, "REGISTRAR_ROLLOUT_RUN_TIME (value '0s')"],
  ])('refuses %j, naming the variable and the value', (env, message) => {
    expect(() => readRolloutConfig(env)).toThrow(ConfigError);
    expect(() => readRolloutConfig(env)).toThrow(message);
  });

  it('compares and names group sources', () => {
    expect(sameGroupSource({ kind: 'cluster', selector: 'a=b' }, { kind: 'cluster' })).toBe(false);
    expect(sameGroupSource({ kind: 'registry' }, { kind: 'registry' })).toBe(true);
    expect(
      groupsComeFromClusterMessage(
        'delete',
        { namespace: 'shop', name: 'web' },
        { kind: 'cluster', selector: 'x=y' },
      ),
    ).toBe(
      'workloadgroup shop/web: groups come from the Kubernetes cluster (the registrar syncs its WorkloadGroups labelled x=y); delete it from the cluster (kubectl delete workloadgroup web -n shop): the registrar follows',
    );
  });
});
