import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ISTIO_API_VERSION, type WorkloadGroup } from '../../lib/domain/model.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import {
  GROUP_READ_WINDOW_MS,
  waitOutGroupReads,
} from '../../lib/registration/group-read-window.ts';
import {
  type RegisterWorkloadDeps,
  registerWorkload,
} from '../../lib/registration/register-workload.ts';
import { removeGroupEntries } from '../../lib/registration/remove-group-entries.ts';
import { freshRegistry, startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * A new entry reads its group once when its connect is fast, and still never outlives a group
 * deleted while it registered (lib/registration/group-read-window.ts): real dynalite, the
 * requests counted by a middleware on the store's own client (the wire is not mocked). The
 * deletion between the connect's group read and its write is played by a store whose group
 * read deletes the group right after reading it, as `delete wg` would in between.
 */
const NS = 'shop';
const GROUP = { namespace: NS, name: 'web' };
let dynamo: TestDynamo;
let registry: RegistrarStore;
let requests: { command: string; sk: string }[];

beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

beforeEach(async () => {
  const fresh = await freshRegistry(dynamo.endpoint, 'window');
  registry = fresh.store;
  requests = [];
  fresh.raw.middlewareStack.add(
    (next, context) => async (args) => {
      // The document client's input, before marshalling: keys are plain strings.
      const input = args.input as { Key?: { sk?: string } };
      requests.push({ command: String(context.commandName), sk: input.Key?.sk ?? '' });
      return next(args);
    },
    { step: 'initialize', name: 'countRequests' },
  );
  await registry.applyGroup(group());
  requests.length = 0;
});

function group(): WorkloadGroup {
  return {
    apiVersion: ISTIO_API_VERSION,
    kind: 'WorkloadGroup',
    metadata: { ...GROUP },
    spec: { template: { ports: { http: 8080 } } },
  };
}

/** The group reads a connect made (GetItem of the group's key). */
const groupReads = () =>
  requests.filter((r) => r.command === 'GetItemCommand' && r.sk.startsWith('WG#')).length;

/** The store, except that its group read is followed by the group's deletion. */
function deletedAfterRead(): RegisterWorkloadDeps['store'] {
  return new Proxy(registry, {
    get(target, key, receiver) {
      if (key !== 'getGroup') {
        const value = Reflect.get(target, key, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      }
      return async (ref: typeof GROUP) => {
        const read = await target.getGroup(ref);
        await target.deleteGroup(ref);
        return read;
      };
    },
  });
}

/** A connect within the window, however loaded the machine (the clock stands still). */
const fast = () => 0;

/** A clock that reads `first` at the group read and `later` ever after. */
function clockJumping(later: number) {
  let calls = 0;
  return () => (calls++ === 0 ? 0 : later);
}

function connect(store: RegisterWorkloadDeps['store'], clock?: () => number, ip = '10.0.0.1') {
  return registerWorkload(
    { store, controller: 'workload-registrar', ...(clock ? { clock } : {}) },
    {
      request: { group: GROUP.name, namespace: NS, ips: [ip], labels: {} },
      identity: { principal: 'token:t1', namespace: NS },
      connectionId: `conn-${ip}`,
      connectedAt: Date.now(),
      carried: undefined,
    },
  );
}

const entryOf = (ip: string) => ({ namespace: NS, name: `web-${ip}` });

describe('a new entry and its group read', () => {
  it('reads the group once when the connect writes within the window', async () => {
    const result = await connect(registry, fast);
    expect(result.outcome).toBe('created');
    expect(groupReads()).toBe(1);
    expect(await registry.getEntry(entryOf('10.0.0.1'))).toBeDefined();
  });

  it('reads it again when the connect took longer than the window, and keeps the entry of a group still there', async () => {
    const result = await connect(registry, clockJumping(GROUP_READ_WINDOW_MS + 1));
    expect(result.outcome).toBe('created');
    expect(groupReads()).toBe(2);
    expect(await registry.getEntry(entryOf('10.0.0.1'))).toBeDefined();
  });

  it('a slow connect whose group was deleted meanwhile takes its entry back and says so', async () => {
    await expect(
      connect(deletedAfterRead(), clockJumping(GROUP_READ_WINDOW_MS + 1)),
    ).rejects.toThrow(
      /cannot find WorkloadGroup shop\/web: it was deleted while this VM registered/,
    );
    expect(await registry.getEntry(entryOf('10.0.0.1'))).toBeUndefined();
  });

  it("a fast connect whose group was deleted meanwhile is in the cascade's listing, which waits out the window", async () => {
    // The deletion answered at the connect's group read; the cascade starts right after.
    const deletedAt = performance.now();
    const result = await connect(deletedAfterRead(), fast);
    expect(result.outcome).toBe('created');
    expect(groupReads()).toBe(1);
    const removed = await removeGroupEntries(registry, GROUP, { at: Date.now() }, undefined, {
      deletedAt,
    });
    expect(performance.now() - deletedAt).toBeGreaterThanOrEqual(GROUP_READ_WINDOW_MS);
    expect(removed.map((r) => r.name)).toEqual(['web-10.0.0.1']);
    expect(await registry.getEntry(entryOf('10.0.0.1'))).toBeUndefined();
  });
});

describe("the cascade's wait", () => {
  it('waits what is left of the window after the deletion, and nothing once it passed', async () => {
    const waited: number[] = [];
    const wait = async (ms: number) => {
      waited.push(ms);
    };
    await waitOutGroupReads(1_000, () => 1_500, wait);
    await waitOutGroupReads(1_000, () => 1_000 + GROUP_READ_WINDOW_MS, wait);
    expect(waited).toEqual([GROUP_READ_WINDOW_MS - 500]);
  });
});
