import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

import { startTenantRuntime, type TenantRuntime } from '../fixtures/tenant-runtime.ts';

/**
 * Every label key an agent sends gets an answer of 2xx (registered) or 4xx (refused, naming
 * the label), never a 5xx: a key named like a member of Object.prototype (`constructor`,
 * `toString`, `__proto__`, ...) is a label like any other. A 500 would let any tenant fire the
 * operator's error alarms at will. Real WebSocket clients against the local runtime, the
 * whole connect path (gateway, authorizer, $connect, dynalite).
 */

let tenants: TenantRuntime;

beforeAll(async () => {
  tenants = await startTenantRuntime({ shop: ['web'] });
});

afterAll(async () => {
  await tenants?.close();
});

/** The HTTP answer to the upgrade: 101 when it opened (then closed at once), else the status. */
function answer(url: string, headers: Record<string, string>) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    socket.on('open', () => {
      socket.close(1000, 'test over');
      resolve({ status: 101, body: '' });
    });
    socket.on('unexpected-response', (_request, response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() });
        socket.terminate();
      });
    });
    socket.on('error', (error) => {
      if (socket.readyState !== WebSocket.CLOSED) reject(error);
    });
  });
}

let host = 0;

/** Connects a fresh VM (its own address) with one label, as the agent's `--label k=v` sends it. */
async function connectWithLabel(key: string, value: string) {
  host += 1;
  const ip = `10.77.${Math.floor(host / 250)}.${(host % 250) + 1}`;
  const { url, headers } = tenants.request(
    'shop',
    'web',
    ip,
    `&label=${encodeURIComponent(`${key}=${value}`)}`,
  );
  return answer(url, headers);
}

function expectTwoOrFourHundred(result: { status: number; body: string }, key: string) {
  const what = `label key '${key}' answered ${result.status} ${result.body}`;
  const ok = result.status === 101 || (result.status >= 400 && result.status < 500);
  expect(ok, what).toBe(true);
  if (result.status !== 101) {
    // A refusal names the field, so the agent's log says what to fix.
    expect(result.body, what).toContain('label');
  }
}

const PROTOTYPE_NAMES = Object.getOwnPropertyNames(Object.prototype);

describe('label keys named like object members', () => {
  it.each(PROTOTYPE_NAMES)(
    'answers 2xx or 4xx for the key %s, bare, in a user domain and in a reserved one',
    async (name) => {
      for (const key of [
        name,
        `example.com/${name}`,
        `istio.io/${name}`,
        `topology.istio.io/${name}`,
      ]) {
        expectTwoOrFourHundred(await connectWithLabel(key, 'x'), key);
      }
      // And as a value.
      expectTwoOrFourHundred(await connectWithLabel('tier', name), `tier=${name}`);
    },
  );

  it('registers a VM labelled constructor=x and toString=y, keeping them as labels', async () => {
    host += 1;
    const ip = `10.78.0.${host % 250}`;
    const { url, headers } = tenants.request(
      'shop',
      'web',
      ip,
      '&label=constructor=x&label=toString=y&label=valueOf=z&label=hasOwnProperty=w',
    );
    expect((await answer(url, headers)).status).toBe(101);
    const entry = await tenants.store.getEntry({ namespace: 'shop', name: `web-${ip}` });
    expect(entry?.entry.spec.labels).toEqual({
      constructor: 'x',
      toString: 'y',
      valueOf: 'z',
      hasOwnProperty: 'w',
    });
  });

  it('answers 2xx or 4xx for random keys and values (fast-check)', async () => {
    const name = fc.oneof(
      fc.constantFrom(...PROTOTYPE_NAMES),
      fc.stringMatching(/^[A-Za-z0-9][-A-Za-z0-9_.]{0,20}$/),
      fc.string({ maxLength: 24 }),
    );
    const prefix = fc.constantFrom(
      '',
      'example.com/',
      'istio.io/',
      'service.istio.io/',
      'app.kubernetes.io/',
      'topology.kubernetes.io/',
    );
    await fc.assert(
      fc.asyncProperty(prefix, name, name, async (before, key, value) => {
        expectTwoOrFourHundred(await connectWithLabel(`${before}${key}`, value), before + key);
      }),
      { numRuns: 60 },
    );
  });
});
