import { afterAll, beforeAll, expect, it } from 'vitest';

import { waitFor } from '../fixtures/agent-targets.ts';
import {
  type AgentTestbed,
  entryName,
  NAMESPACE,
  startAgentTestbed,
} from '../fixtures/agent-testbed.ts';
import { openClient } from '../fixtures/websocket-client.ts';

/**
 * A real agent whose namespace is at its quota: refused 429, it says why and backs off (a 429
 * is no refusal to it: the failure backoff, so it gets in soon after room is made), and it
 * registers once another VM of the namespace leaves. Local runtime, quota set with the CLI.
 */
let bed: AgentTestbed;

beforeAll(async () => {
  bed = await startAgentTestbed({
    functionEnv: { REGISTRAR_GROUP_CACHE_TTL: '0s', REGISTRAR_NAMESPACE_SETTINGS_CACHE: '1ms' },
  });
  await bed.applyGroup('web');
});
afterAll(async () => {
  await bed?.close();
});

it('waits out a full namespace and registers once a VM leaves', async () => {
  const set = await bed.cli(['namespace', 'set', '-n', NAMESPACE, '--max-entries', '1']);
  expect(set.stdout).toBe(
    `namespace "${NAMESPACE}" configured: max-entries 1, connect-rate 1000/s (default), networks any, address-ranges any, heartbeat-checks 1200000/m (default)\n`,
  );
  const other = await openClient(
    `${bed.runtime.url}?group=web&namespace=${NAMESPACE}&ip=10.0.0.99`,
    { Authorization: `Bearer ${bed.token}` },
  );

  const agent = await bed.agent({ ips: ['10.0.0.7'] });
  await waitFor(
    () => agent.logs.some((line) => line.includes('HTTP 429')),
    'the refusal in the agent log',
  );
  expect(agent.logs.join('\n')).toContain(
    `HTTP 429: namespace '${NAMESPACE}' is at its quota max-entries 1: 1 entries are connected`,
  );
  expect(await bed.entry(entryName('web', '10.0.0.7'))).toBeUndefined();

  await other.close();

  await waitFor(() => agent.events.some((e) => e.type === 'registered'), 'registration', 20_000);
  expect((await bed.entry(entryName('web', '10.0.0.7')))?.connected).toBe(true);
  await agent.stop();
});
