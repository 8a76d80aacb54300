import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { HEARTBEAT_ANNOTATIONS } from '../../lib/domain/heartbeat.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { startTenantRuntime, type TenantRuntime, until } from '../fixtures/tenant-runtime.ts';
import type { TestClient } from '../fixtures/websocket-client.ts';

/**
 * A namespace's heartbeat checks count against its quota (`registrar namespace set
 * --heartbeat-checks`): `apply` refuses a setting that would take them past it, naming the
 * document, the annotation and its value and the quota, and writes nothing. Ten real agents'
 * connections hold `evil/spam`'s entries (WebSocket clients against the local gateway).
 */
let tenants: TenantRuntime;
const clients: TestClient[] = [];

const spam = (interval?: string, misses?: string) => `
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata:
  name: spam
  namespace: evil
${
  interval
    ? `  annotations:
    ${HEARTBEAT_ANNOTATIONS.interval}: ${interval}
    ${HEARTBEAT_ANNOTATIONS.misses}: "${misses}"`
    : ''
}
spec:
  template:
    ports: { http: 8080 }
`;

const apply = (yaml: string) =>
  captureCli(['apply', '-f', '-'], {
    env: {
      REGISTRAR_DYNAMODB_ENDPOINT: tenants.runtime.dynamoDbEndpoint,
      REGISTRAR_TABLE: tenants.runtime.tableName,
    },
    stdin: yaml,
  });

beforeAll(async () => {
  tenants = await startTenantRuntime({ evil: ['spam'], shop: ['web'] });
  for (let i = 1; i <= 10; i++) {
    clients.push(await tenants.connect('evil', 'spam', `10.66.0.${i}`, '&agentVersion=0.3.0'));
  }
  await until(
    async () =>
      (await tenants.cli(['get', 'we', '-n', 'evil', '--no-headers'])).stdout
        .split('\n')
        .filter(Boolean).length === 10,
  );
}, 60_000);

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  await tenants?.close();
});

describe("a namespace's quota of heartbeat checks", () => {
  it('refuses an apply that would take the namespace past it, naming the field, the value and the quota, and writes nothing', async () => {
    const set = await tenants.cli([
      'namespace',
      'set',
      '-n',
      'evil',
      '--heartbeat-checks',
      '100/m',
    ]);
    expect(set.code).toBe(0);
    expect(set.stdout).toContain('heartbeat-checks 100/m');

    const refused = await apply(spam('5s', '2'));

    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toBe(
      `error: document 1 (WorkloadGroup spam): metadata.annotations["${HEARTBEAT_ANNOTATIONS.interval}"]: '5s' (5s x 2) would make namespace 'evil' ask for 120 heartbeat checks a minute (spam: 10 VMs x 12), over its quota heartbeat-checks 100/m; lengthen the heartbeat, or raise the quota with: registrar namespace set -n evil --heartbeat-checks 120/m\nnothing was written\n`,
    );
    const stored = await tenants.store.getGroup({ namespace: 'evil', name: 'spam' });
    expect(stored?.group.metadata.annotations?.[HEARTBEAT_ANNOTATIONS.interval]).toBeUndefined();
  });

  it('takes a setting within it, and the same apply again however the quota moved since', async () => {
    // 10 VMs x 4 (15 s passes) = 40 a minute.
    expect((await apply(spam('10s', '3'))).code).toBe(0);
    await tenants.cli(['namespace', 'set', '-n', 'evil', '--heartbeat-checks', '20/m']);
    // Lowered below what it asks: the same setting is not refused (the sweeper paces it).
    const again = await apply(spam('10s', '3'));
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('unchanged');
    // Longer is fewer checks: never refused.
    expect((await apply(spam('60s', '3'))).code).toBe(0);
  });

  it('counts only its own namespace: another namespace applies its short heartbeat', async () => {
    const web = spam('5s', '2')
      .replaceAll('spam', 'web')
      .replace('namespace: evil', 'namespace: shop');
    expect((await apply(web)).code).toBe(0);
  });

  it('shows the quota in namespace get, and the default where none is set', async () => {
    const shown = await tenants.cli(['namespace', 'get', '-A']);
    expect(shown.stdout).toMatch(/HEARTBEAT-CHECKS/);
    expect(shown.stdout).toMatch(/evil\s+10\s+.*\s20\/m\n/);
    expect(shown.stdout).toMatch(/shop\s+0\s+.*\s1200000\/m \(default\)\n/);
    const bad = await tenants.cli(['namespace', 'set', '-n', 'evil', '--heartbeat-checks', '0']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--heartbeat-checks <n>' argument '0' is invalid");
  });
});
