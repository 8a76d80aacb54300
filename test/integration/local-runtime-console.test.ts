import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createJoinToken } from '../../lib/auth/join-token.ts';
import type { Probe } from '../../lib/domain/model.ts';
import { printable } from '../../lib/printable.ts';
import { createDocumentClient } from '../../lib/store/dynamodb-client.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { type RuntimeProcess, startRuntimeProcess } from '../fixtures/local-runtime-process.ts';
import { openClient, refusedUpgrade } from '../fixtures/websocket-client.ts';

/**
 * `npm start`'s console as a developer reads it: the runtime and the agent are real processes
 * (`node infra/local/main.ts`, `node bin/registrar-agent.js`), the agent's probe hits a real
 * HTTP server this test turns unhealthy, and refusals come from real WebSocket upgrades.
 */
let dataDir: string;
let runtime: RuntimeProcess | undefined;
let agent: ChildProcess | undefined;
let probeTarget: Server | undefined;
let probeStatus = 200;

beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'registrar-console-'));
});
afterEach(async () => {
  if (agent && agent.exitCode === null) {
    agent.kill('SIGKILL');
    await new Promise((resolve) => agent?.once('exit', resolve));
  }
  agent = undefined;
  await runtime?.stop();
  runtime = undefined;
  probeTarget?.close();
  probeTarget = undefined;
  rmSync(dataDir, { recursive: true, force: true });
});

/** Applies `shop/web` (with a probe, when given) and returns a join token for `shop`. */
async function prepare(probe?: Probe): Promise<string> {
  const local = JSON.parse(readFileSync(join(dataDir, 'local.json'), 'utf8'));
  const client = createDocumentClient({ region: local.region, endpoint: local.dynamoDbEndpoint });
  try {
    await composeRegistry(client, local.tableName).applyGroup({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'web', namespace: 'shop' },
      spec: { template: { ports: { http: 9080 } }, ...(probe ? { probe } : {}) },
    });
    const created = createJoinToken({ namespace: 'shop', ttlMs: 3_600_000, now: Date.now() });
    await new DynamoDbTokenStore(client, local.tableName).putToken(created.stored);
    return created.token;
  } finally {
    client.destroy();
  }
}

async function startProbeTarget(): Promise<number> {
  probeTarget = createServer((_request, response) => {
    response.statusCode = probeStatus;
    response.end();
  });
  await new Promise<void>((resolve) => probeTarget?.listen(0, '127.0.0.1', resolve));
  return (probeTarget.address() as AddressInfo).port;
}

function startAgent(url: string, token: string): ChildProcess {
  return spawn(
    process.execPath,
    ['bin/registrar-agent.js', '--url', url, '--group', 'web', '--namespace', 'shop'],
    {
      // The agent drains before closing on SIGTERM; not what this test is about.
      env: {
        ...process.env,
        REGISTRAR_AGENT_TOKEN: token,
        REGISTRAR_AGENT_IP: '10.0.0.12',
        REGISTRAR_AGENT_IMDS: 'false',
        REGISTRAR_AGENT_DRAIN_DELAY: '0s',
      },
      stdio: 'ignore',
    },
  );
}

/** The console's lines after the banner, without their HH:MM:SS. */
function events(output: string): string[] {
  const afterBanner = output.slice(output.indexOf('Press Ctrl-C to stop.\n') + 22);
  return afterBanner
    .split('\n')
    .filter((line) => /^\d\d:\d\d:\d\d /.test(line))
    .map((line) => line.slice(9));
}

const line = (pattern: RegExp) => (output: string) => events(output).some((l) => pattern.test(l));

async function waitForEvent(pattern: RegExp): Promise<void> {
  await runtime?.waitForOutput(new RegExp(`^\\d\\d:\\d\\d:\\d\\d ${pattern.source}`, 'm'), 30_000);
}

describe('the local console', () => {
  it('tells an agent’s life in one line per event, and a refusal in one line', async () => {
    runtime = await startRuntimeProcess([
      '--data-dir',
      dataDir,
      '--grace-period',
      '1s',
      '--sweep-interval',
      '1s',
    ]);
    const banner = runtime.stdout();
    expect(banner).toContain(
      '  auth mode:        token (agents present a join token: npx registrar token create -n <namespace>)',
    );
    expect(banner).toContain('  sweep policy:     grace period 1s, max connection age 2h');
    expect(banner).toContain(
      '  console:          one line per event (LOG_LEVEL=info; --log-format json for the raw lines)',
    );

    const port = await startProbeTarget();
    const token = await prepare({
      periodSeconds: 1,
      // A loaded machine must not turn a slow answer into an unhealthy line of its own.
      timeoutSeconds: 10,
      failureThreshold: 1,
      httpGet: { path: '/healthz', port },
    });
    agent = startAgent(runtime.url, token);
    await waitForEvent(/registered shop\/web-10\.0\.0\.12 \(connection \S+\)/);
    await waitForEvent(/shop\/web-10\.0\.0\.12 healthy -> true/);

    probeStatus = 503;
    await waitForEvent(/shop\/web-10\.0\.0\.12 healthy -> false: .*503/);

    // A token of shop used for another namespace: 403 from the authorizer.
    const refusal = await refusedUpgrade(`${runtime.url}/?group=web&namespace=other&ip=10.0.0.99`, {
      Authorization: `Bearer ${token}`,
    });
    expect(refusal.statusCode).toBe(403);
    await waitForEvent(/refused \$connect with 403 /);

    agent.kill('SIGTERM');
    await new Promise((resolve) => agent?.once('exit', resolve));
    await waitForEvent(/disconnected shop\/web-10\.0\.0\.12 \(last holder left: connection \S+\)/);
    await waitForEvent(/swept shop\/web-10\.0\.0\.12 after 1s grace/);

    const told = events(runtime.stdout());
    const connection = told[0]?.match(/\(connection (\S+)\)/)?.[1];
    expect(told).toEqual([
      `registered shop/web-10.0.0.12 (connection ${connection})`,
      'shop/web-10.0.0.12 healthy -> true',
      expect.stringMatching(/^shop\/web-10\.0\.0\.12 healthy -> false: .*503$/),
      expect.stringMatching(
        /^refused \$connect with 403 join token of namespace shop used for namespace other \(connection \S+\)$/,
      ),
      `disconnected shop/web-10.0.0.12 (last holder left: connection ${connection})`,
      'swept shop/web-10.0.0.12 after 1s grace',
    ]);
    // No raw Lambda JSON on the console, and nothing on stderr.
    expect(runtime.stdout()).not.toMatch(/^\{/m);
    expect(await runtime.stop()).toBe(0);
    expect(runtime.stderr()).toBe('');
  });

  it('prints the functions’ raw JSON lines with --log-format json', async () => {
    runtime = await startRuntimeProcess(['--data-dir', dataDir, '--log-format', 'json']);
    expect(runtime.stdout()).toContain(
      "  console:          the functions' JSON log lines (LOG_LEVEL=info)",
    );
    const token = await prepare();
    const client = await openClient(`${runtime.url}/?group=web&namespace=shop&ip=10.0.0.13`, {
      Authorization: `Bearer ${token}`,
    });
    await runtime.waitForOutput('"message":"workload connected"');
    const record = runtime
      .stdout()
      .split('\n')
      .filter((text) => text.startsWith('{'))
      .map((text) => JSON.parse(text) as Record<string, unknown>)
      .find((parsed) => parsed.message === 'workload connected');
    expect(record).toMatchObject({
      level: 'INFO',
      function_name: 'registrar-connect',
      entry: 'shop/web-10.0.0.13',
      outcome: 'created',
      connectionId: expect.any(String),
    });
    expect(events(runtime.stdout())).toEqual([]);
    await client.close(1000);
  });

  it('shows only warnings and refusals at LOG_LEVEL=warn', async () => {
    runtime = await startRuntimeProcess(['--data-dir', dataDir], { LOG_LEVEL: 'warn' });
    const token = await prepare();
    const client = await openClient(`${runtime.url}/?group=web&namespace=shop&ip=10.0.0.14`, {
      Authorization: `Bearer ${token}`,
    });
    await refusedUpgrade(`${runtime.url}/?group=nogroup&namespace=shop&ip=10.0.0.15`, {
      Authorization: `Bearer ${token}`,
    });
    await waitForEvent(/refused \$connect with 404 /);
    expect(events(runtime.stdout())).toEqual([
      expect.stringMatching(
        /^refused \$connect with 404 NotFound: cannot find WorkloadGroup shop\/nogroup \(connection \S+\)$/,
      ),
    ]);
    expect(line(/registered/)(runtime.stdout())).toBe(false);
    await client.close(1000);
  });

  it('escapes what an agent sends, so one event is one line and no escape sequence reaches the terminal', async () => {
    runtime = await startRuntimeProcess(['--data-dir', dataDir]);
    const token = await prepare({ periodSeconds: 10, httpGet: { path: '/healthz', port: 9 } });
    const client = await openClient(`${runtime.url}/?group=web&namespace=shop&ip=10.0.0.16`, {
      Authorization: `Bearer ${token}`,
    });
    // A forged second line, a colour, a C1 CSI and a Unicode line separator.
    const message = 'probe failed\n12:00:00 registered shop/evil\r\u001b[31mred\u009b2J\u2028end';
    expect(await client.request({ action: 'health', healthy: false, message })).toMatchObject({
      ok: true,
    });
    await waitForEvent(/shop\/web-10\.0\.0\.16 healthy -> false/);
    // A label value with a newline and an escape, refused 400 with the value quoted.
    const refusal = await refusedUpgrade(
      `${runtime.url}/?group=web&namespace=shop&ip=10.0.0.17&label=${encodeURIComponent('team=a\n\u001b[2Jb')}`,
      { Authorization: `Bearer ${token}` },
    );
    expect(refusal.statusCode).toBe(400);
    await waitForEvent(/refused \$connect with 400 /);
    await client.close(1000, 'bye\n\u001b[0m');
    await waitForEvent(/disconnected shop\/web-10\.0\.0\.16/);

    const output = runtime.stdout();
    // Lines hold no control character: printable() has nothing left to escape.
    for (const l of output.split('\n')) expect(printable(l)).toBe(l);
    expect(events(output)).toContain(
      'shop/web-10.0.0.16 healthy -> false: probe failed\\n12:00:00 registered shop/evil\\r\\u001b[31mred\\u009b2J\\u2028end',
    );
    expect(events(output).filter((l) => l.startsWith('refused $connect with 400 '))).toEqual([
      expect.stringContaining('\\n\\u001b[2J'),
    ]);
    // Nothing forged a line of its own.
    expect(output).not.toMatch(/^12:00:00 registered shop\/evil/m);
  });
});
