import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_RETENTION_MS, EVENTS_TRIM_AT } from '../../lib/domain/entry-events.ts';
import { entryHistory } from '../../lib/domain/entry-history.ts';
import { effectiveHealth } from '../../lib/domain/entry-record.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import { entryKey } from '../../lib/store/item-codec.ts';
import { itemSize } from '../../lib/store/item-size.ts';
import { countRequests, type RequestCounter } from '../../lib/store/request-counter.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * An entry's event history and an operator's cordon, on real DynamoDB semantics (dynalite, or
 * DynamoDB Local with REGISTRAR_TEST_BACKEND=dynamodb-local): what each lifecycle write
 * records, the bounds, the history that outlives a deleted entry, and the races a cordon must
 * survive (a reconnect, a health report, an uncordon, a sweep, a retried write).
 */
const NS = 'shop';
const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);
const MINUTE = 60_000;
/** Deletions whose history item was not written, as the store told its composition root. */
const lost: string[] = [];

let dynamo: TestDynamo;
let store: RegistrarStore;
let requests: RequestCounter;
/** Answers 500 after applying the next request this accepts: the SDK retries it. */
let failAfterApplying: ((command: string, input: Record<string, unknown>) => boolean) | undefined;
/** Fails every request this accepts before it reaches the table. */
let failBefore: ((command: string, input: Record<string, unknown>) => boolean) | undefined;
let count = 0;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  store = composeRegistry(dynamo.client, dynamo.tableName, {
    onHistoryLost: (ref, deletion) => lost.push(`${ref.namespace}/${ref.name}: ${deletion.reason}`),
  });
  requests = countRequests(dynamo.client);
  // Above the SDK's retries: a failure here is final (every attempt failed).
  dynamo.client.middlewareStack.add(
    (next, context) => async (args) => {
      if (failBefore?.(context.commandName ?? '', args.input as Record<string, unknown>)) {
        throw Object.assign(new Error('Rate exceeded'), {
          name: 'ThrottlingException',
          $fault: 'client',
          $metadata: { httpStatusCode: 400 },
        });
      }
      return next(args);
    },
    { step: 'initialize', name: 'testFinalFailures' },
  );
  // Below them: the SDK retries the request, which the table had applied.
  dynamo.client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown>;
      const result = await next(args);
      if (failAfterApplying?.(context.commandName ?? '', input)) {
        failAfterApplying = undefined;
        throw Object.assign(new Error('We encountered an internal error. Please try again.'), {
          name: 'InternalServerError',
          $fault: 'server',
          $metadata: { httpStatusCode: 500 },
        });
      }
      return result;
    },
    { step: 'deserialize', name: 'testAppliedThenFailed' },
  );
});
afterEach(() => {
  failAfterApplying = undefined;
  failBefore = undefined;
});
afterAll(async () => {
  await dynamo?.close();
});

function vm(): { namespace: string; name: string } {
  count += 1;
  return { namespace: NS, name: `web-10-0-1-${count}` };
}

const connect = (ref: { name: string }, connectionId: string, at: number) =>
  store.connect(connectChange({ name: ref.name, namespace: NS, connectionId, connectedAt: at }));

const report = (
  ref: { namespace: string; name: string },
  connectionId: string,
  healthy: boolean,
  at: number,
) =>
  store.reportHealth({
    entry: ref,
    connectionId,
    healthy,
    at,
    ...(healthy ? {} : { message: 'probe failed' }),
  });

async function reasons(ref: { namespace: string; name: string }, now = T0 + 60 * MINUTE) {
  const record = await store.getEntry(ref);
  return record ? entryHistory(record, now).map((event) => event.reason) : undefined;
}

async function rawItem(ref: { namespace: string; name: string }) {
  const { Item } = await dynamo.client.send(
    new GetCommand({ TableName: dynamo.tableName, Key: entryKey(ref), ConsistentRead: true }),
  );
  return Item;
}

describe('events recorded by the lifecycle writes', () => {
  it('records registration, health transitions, drain and departure, and nothing for a refresh or a rotation', async () => {
    const ref = vm();
    await connect(ref, 'a', T0);
    await report(ref, 'a', true, T0 + 1);
    await report(ref, 'a', true, T0 + 2);
    // A rotation: the new connection joins, the old one leaves saying it was replaced.
    await connect(ref, 'b', T0 + 10);
    await report(ref, 'b', true, T0 + 11);
    await store.leave({ entry: ref, connectionId: 'a', at: T0 + 12, replaced: true });
    await report(ref, 'b', false, T0 + 20);
    await store.drain({ entry: ref, connectionId: 'b' }, T0 + 30);
    await store.drain({ entry: ref, connectionId: 'b' }, T0 + 31);
    await store.leave({ entry: ref, connectionId: 'b', at: T0 + 40, departure: 'clean' });

    const record = await store.getEntry(ref);
    expect(
      record && entryHistory(record, T0 + MINUTE).map((e) => [e.reason, e.at, e.type]),
    ).toEqual([
      ['Healthy', T0 + 1, 'Normal'],
      ['Unhealthy', T0 + 20, 'Warning'],
      ['Draining', T0 + 30, 'Normal'],
      ['Disconnected', T0 + 40, 'Normal'],
    ]);
    // The creation is derived from the entry's creationTimestamp when it has one.
    expect(record?.eventsSince).toBe(T0);
  });

  it('records a connect that brings the entry back, once, even when the SDK resends the append', async () => {
    const ref = vm();
    await connect(ref, 'a', T0);
    await store.leave({ entry: ref, connectionId: 'a', at: T0 + MINUTE });
    failAfterApplying = (command, input) =>
      command === 'UpdateItemCommand' &&
      String(input.UpdateExpression).startsWith('SET #evList') &&
      String(input.ConditionExpression).includes(':seen');
    expect(await connect(ref, 'b', T0 + 2 * MINUTE)).toBe('reconnected');
    expect(failAfterApplying).toBeUndefined(); // the fault fired

    const events = (await store.getEntry(ref))?.events ?? [];
    expect(events.map((e) => e.reason)).toEqual(['Disconnected', 'Reconnected']);
    expect(events[1]?.message).toContain(
      `disconnected since ${new Date(T0 + MINUTE).toISOString()}`,
    );
  });

  it('records a liveness drop of a phantom holder, and the last holder found gone', async () => {
    const ref = vm();
    await connect(ref, 'a', T0);
    await connect(ref, 'b', T0 + 1);
    expect(await store.dropHolders(ref, ['a'], T0 + MINUTE)).toBe('still-held');
    expect(await store.dropHolders(ref, ['b'], T0 + 2 * MINUTE)).toBe('disconnected');
    const events = (await store.getEntry(ref))?.events ?? [];
    expect(events.map((e) => [e.reason, e.type])).toEqual([
      ['ConnectionsGone', 'Normal'],
      ['ConnectionsGone', 'Warning'],
    ]);
    expect(events[1]?.message).toContain('no connection holds the entry: disconnected');
  });

  it('keeps the list bounded: a flapping VM never grows the item past the trim length', async () => {
    const ref = vm();
    await connect(ref, 'a', T0);
    const sizes: number[] = [];
    for (let i = 1; i <= 40; i++) {
      await report(ref, 'a', i % 2 === 0, T0 + i * 1000);
      const item = await rawItem(ref);
      sizes.push(itemSize(item ?? {}));
      expect(((item?.events as unknown[] | undefined) ?? []).length).toBeLessThan(EVENTS_TRIM_AT);
    }
    const events = (await store.getEntry(ref))?.events ?? [];
    // The newest are kept.
    expect(events.at(-1)?.at).toBe(T0 + 40_000);
    expect(Math.max(...sizes)).toBeLessThan(2 * 1024);
    console.info(`entry item with events: ${Math.min(...sizes)}-${Math.max(...sizes)} bytes`);
  });

  it('reads an entry a release without history wrote, and starts its history at the first new write', async () => {
    const ref = vm();
    await dynamo.client.send(
      new PutCommand({
        TableName: dynamo.tableName,
        Item: {
          ...entryKey(ref),
          entry: {
            apiVersion: 'networking.istio.io/v1',
            kind: 'WorkloadEntry',
            metadata: { ...ref, creationTimestamp: new Date(T0).toISOString() },
            spec: { address: '10.0.0.9' },
          },
          revision: 4,
          autoRegistrationGroup: 'web',
          controller: 'workload-registrar',
          disconnectedAt: T0 + MINUTE,
          departure: 'abnormal',
          healthStatus: 'True',
          lastProbeTime: T0 + 30_000,
          healthyTrueSince: T0 + 30_000,
        },
      }),
    );
    expect(await reasons(ref)).toEqual(['Registered', 'Healthy', 'Disconnected']);
    await connect(ref, 'new', T0 + 2 * MINUTE);
    expect(await reasons(ref)).toEqual(['Registered', 'Healthy', 'Disconnected', 'Reconnected']);
  });
});

describe('the history of a deleted entry', () => {
  it('keeps the events and why it went after the sweeper, EC2 or an operator deleted it', async () => {
    const swept = vm();
    await connect(swept, 'a', T0);
    await store.leave({ entry: swept, connectionId: 'a', at: T0 + MINUTE });
    const read = await store.getEntry(swept);
    expect(read && (await store.deleteSwept(read, { at: T0 + 7 * MINUTE }))).toBe('deleted');

    const ec2 = vm();
    await store.connect({
      ...connectChange({ name: ec2.name, namespace: NS, connectionId: 'e', connectedAt: T0 }),
      instanceId: 'i-0123456789abcdef0',
    });
    expect(await store.removeInstanceEntry(ec2, 'i-0123456789abcdef0', T0 + MINUTE)).toBe(
      'deleted',
    );

    const byHand = vm();
    await connect(byHand, 'h', T0);
    expect(await store.removeEntry(byHand, { at: T0 + 2 * MINUTE })).toEqual({ holders: ['h'] });

    const of = async (ref: { name: string }) =>
      (await store.deletedEntries(NS, ref.name, T0 + 10 * MINUTE)).map((h) =>
        h.events.map((e) => e.reason),
      );
    expect(await of(swept)).toEqual([['Disconnected', 'Swept']]);
    expect(await of(ec2)).toEqual([['InstanceGone']]);
    expect(await of(byHand)).toEqual([['Deleted']]);
    const [history] = await store.deletedEntries(NS, swept.name, T0 + 10 * MINUTE);
    expect(history).toMatchObject({
      ref: swept,
      deletedAt: T0 + 7 * MINUTE,
      group: 'web',
      address: '10.0.0.1',
    });
    expect(history?.events.at(-1)?.message).toBe(
      'deleted by the sweeper: disconnected (abnormally) for the whole grace period',
    );
  });

  it('is not listed once expired, and the local pruner removes only expired items', async () => {
    const ref = vm();
    await connect(ref, 'a', T0);
    await store.removeEntry(ref, { at: T0 });
    const later = vm();
    await connect(later, 'b', T0);
    await store.removeEntry(later, { at: T0 + 2 * EVENT_RETENTION_MS });

    const now = T0 + EVENT_RETENTION_MS + MINUTE;
    expect(await store.deletedEntries(NS, ref.name, now)).toEqual([]);
    expect(await store.deletedEntries(NS, later.name, now)).toHaveLength(1);
    expect(await store.pruneExpiredHistory([NS], now, 100)).toBeGreaterThanOrEqual(1);
    expect(await store.deletedEntries(NS, ref.name, T0)).toEqual([]);
    expect(await store.deletedEntries(NS, later.name, now)).toHaveLength(1);
  });

  it('lets the deletion stand when its history cannot be written', async () => {
    const ref = vm();
    await connect(ref, 'a', T0);
    const read = await store.getEntry(ref);
    failBefore = (command) => command === 'PutItemCommand';
    expect(read && (await store.deleteSwept(read, { at: T0 + MINUTE }))).toBe('deleted');
    failBefore = undefined;
    expect(await store.getEntry(ref)).toBeUndefined();
    expect(await store.deletedEntries(NS, ref.name, T0 + MINUTE)).toEqual([]);
    // Not silent: the function logs it and counts a HistoryNotRecorded fault.
    expect(lost).toHaveLength(1);
    expect(lost[0]?.startsWith(`${ref.namespace}/${ref.name}: `)).toBe(true);
  });
});

describe('cordon', () => {
  it('takes the entry out of traffic in one write, with its event; a second cordon keeps the first message', async () => {
    const ref = vm();
    await connect(ref, 'a', T0);
    await report(ref, 'a', true, T0 + 1);
    requests.reset();
    const first = await store.cordon(ref, 'INC-1: bad disk', T0 + MINUTE);
    expect(first.outcome).toBe('cordoned');
    expect(requests.counts()).toEqual({ UpdateItem: 1 });
    expect((await store.cordon(ref, 'another', T0 + 2 * MINUTE)).outcome).toBe('already-cordoned');
    const record = await store.getEntry(ref);
    expect(record?.cordon).toEqual({ at: T0 + MINUTE, message: 'INC-1: bad disk' });
    expect(record && effectiveHealth(record)).toMatchObject({
      status: 'False',
      reason: 'Maintenance',
    });
    expect(await reasons(ref)).toEqual(['Healthy', 'Cordoned']);
    expect((await store.cordon(vm(), 'x', T0)).outcome).toBe('not-found');
    // A message the Healthy condition cannot carry is refused, and nothing is written.
    const other = vm();
    await connect(other, 'b', T0);
    await expect(store.cordon(other, 'x'.repeat(1025), T0)).rejects.toThrow(
      "cordon message of 1025 characters: must be 1 to 1024 (it becomes the Healthy condition's message)",
    );
    expect((await store.getEntry(other))?.cordon).toBeUndefined();
  });

  it('says cordoned when the SDK resent a cordon that had landed', async () => {
    const ref = vm();
    await connect(ref, 'a', T0);
    failAfterApplying = (command, input) =>
      command === 'UpdateItemCommand' &&
      String(input.UpdateExpression).includes('#cordon = :cordon');
    expect((await store.cordon(ref, 'm', T0 + 1)).outcome).toBe('cordoned');
    expect(failAfterApplying).toBeUndefined();
    expect((await store.getEntry(ref))?.events?.map((e) => e.reason)).toEqual(['Cordoned']);
    failAfterApplying = (command, input) =>
      command === 'UpdateItemCommand' && String(input.UpdateExpression).includes('REMOVE #cordon');
    expect((await store.uncordon(ref, T0 + 2)).outcome).toBe('uncordoned');
    expect((await store.uncordon(ref, T0 + 3)).outcome).toBe('not-cordoned');
  });

  it('a health report never puts a cordoned entry back, in either order, and uncordon shows the newest report', async () => {
    const ref = vm();
    await connect(ref, 'a', T0);
    await report(ref, 'a', false, T0 + 1);
    // The report and the cordon race: whichever lands first, the entry is out of traffic.
    await Promise.all([report(ref, 'a', true, T0 + 2), store.cordon(ref, 'm', T0 + 2)]);
    let record = await store.getEntry(ref);
    expect(record && effectiveHealth(record)?.status).toBe('False');
    expect(record?.health?.status).toBe('True');
    await report(ref, 'a', true, T0 + 3);
    // An uncordon racing a report that turns it unhealthy: the report's verdict shows.
    await Promise.all([report(ref, 'a', false, T0 + 4), store.uncordon(ref, T0 + 4)]);
    record = await store.getEntry(ref);
    expect(record?.cordon).toBeUndefined();
    expect(record && effectiveHealth(record)).toMatchObject({
      status: 'False',
      message: 'probe failed',
    });
  });

  it('survives a reconnect that races it, and a rotation after it', async () => {
    const ref = vm();
    await connect(ref, 'a', T0);
    await store.leave({ entry: ref, connectionId: 'a', at: T0 + 1 });
    const [reconnected, cordoned] = await Promise.all([
      connect(ref, 'b', T0 + 2),
      store.cordon(ref, 'm', T0 + 2),
    ]);
    expect(reconnected).toBe('reconnected');
    expect(cordoned.outcome).toBe('cordoned');
    await connect(ref, 'c', T0 + 3);
    await store.leave({ entry: ref, connectionId: 'b', at: T0 + 4, replaced: true });
    const record = await store.getEntry(ref);
    expect(record?.cordon?.message).toBe('m');
    expect(record?.connection?.connectionIds).toEqual(['c']);
  });

  it('makes a sweep delete that read the entry before it wait for the next run', async () => {
    const ref = vm();
    await connect(ref, 'a', T0);
    await store.leave({ entry: ref, connectionId: 'a', at: T0 + 1 });
    const read = await store.getEntry(ref);
    await store.cordon(ref, 'm', T0 + 2);
    expect(read && (await store.deleteSwept(read, { at: T0 + 3 }))).toBe('conflict');
    const again = await store.getEntry(ref);
    expect(again && (await store.deleteSwept(again, { at: T0 + 4 }))).toBe('deleted');
    const [history] = await store.deletedEntries(NS, ref.name, T0 + 5);
    expect(history?.events.map((e) => e.reason)).toEqual(['Disconnected', 'Cordoned', 'Swept']);
  });

  it('keeps a hand-made entry’s cordon and events when the operator applies it again', async () => {
    const entry = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry' as const,
      metadata: { name: `db-${++count}`, namespace: NS },
      spec: { address: '10.1.0.5' },
    };
    await store.applyEntry(entry);
    const ref = { namespace: NS, name: entry.metadata.name };
    await store.cordon(ref, 'm', T0);
    expect(await store.applyEntry({ ...entry, spec: { address: '10.1.0.6' } })).toBe('updated');
    const record = await store.getEntry(ref);
    expect(record?.cordon?.message).toBe('m');
    expect(record?.entry.spec.address).toBe('10.1.0.6');
    expect(record?.events?.map((e) => e.reason)).toEqual(['Cordoned', 'Updated']);
  });
});
