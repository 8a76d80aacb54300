import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJoinToken } from '../../lib/auth/join-token.ts';
import { createDocumentClient } from '../../lib/store/dynamodb-client.ts';
import { DynamoDbTokenStore } from '../../lib/store/dynamodb-token-store.ts';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { type DashboardCli, startDashboardCli } from '../fixtures/dashboard-cli.ts';
import {
  browserTestSkip,
  type HeadlessBrowser,
  launchChromium,
} from '../fixtures/headless-chromium.ts';
import { type RuntimeProcess, spawnRuntime } from '../fixtures/local-runtime-process.ts';

/**
 * `registrar dashboard` over a local runtime that restarts, in Debian's Chromium. `npm start`
 * puts its store on a new port each time; the dashboard once read local.json once, and after a
 * restart said "Live" beside `connect ECONNREFUSED` for good. Here the page must say it is not
 * live while the runtime is down, and show the restarted runtime's registry, without a reload.
 */

let dataDir: string;
let runtime: RuntimeProcess | undefined;
let dashboard: DashboardCli;
let browser: HeadlessBrowser;
const agents: ChildProcess[] = [];
const skipped = browserTestSkip() !== undefined;

interface LocalJson {
  dynamoDbEndpoint: string;
  tableName: string;
  region: string;
  url: string;
}

const localJson = () => JSON.parse(readFileSync(join(dataDir, 'local.json'), 'utf8')) as LocalJson;

async function startRuntime(): Promise<void> {
  runtime = spawnRuntime(['--data-dir', dataDir, '--sweep-interval', '1s']);
  // Generous: a loaded 2-core machine once took over 20 s to start it.
  await runtime.waitForOutput('Press Ctrl-C to stop.', 90_000);
}

/** A VM of group `web` in `shop`, with a join token made in the running registry. */
async function startAgent(ip: string): Promise<void> {
  const local = localJson();
  const client = createDocumentClient({ region: local.region, endpoint: local.dynamoDbEndpoint });
  try {
    const token = createJoinToken({ namespace: 'shop', ttlMs: 3_600_000, now: Date.now() });
    await new DynamoDbTokenStore(client, local.tableName).putToken(token.stored);
    await composeRegistry(client, local.tableName).applyGroup({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'web', namespace: 'shop' },
      spec: { template: { ports: { http: 8080 } } },
    });
    const child = spawn(
      process.execPath,
      [
        'bin/registrar-agent.js',
        ...['--url', local.url, '--group', 'web', '--namespace', 'shop', '--ip', ip],
        ...['--locality', 'us-east-1/us-east-1a', '--no-imds'],
      ],
      { env: { ...process.env, REGISTRAR_AGENT_TOKEN: token.token }, stdio: 'ignore' },
    );
    agents.push(child);
  } finally {
    client.destroy();
  }
}

beforeAll(async () => {
  if (skipped) return;
  dataDir = mkdtempSync(join(tmpdir(), 'dashboard-restart-'));
  await startRuntime();
  await startAgent('10.0.0.1');
  dashboard = await startDashboardCli(['--port', '0', '--refresh', '500ms'], {
    ...process.env,
    REGISTRAR_DATA_DIR: dataDir,
    REGISTRAR_TABLE: undefined,
    REGISTRAR_DYNAMODB_ENDPOINT: undefined,
  });
  browser = await launchChromium({ width: 1280, height: 800 });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await dashboard?.stop();
  for (const agent of agents) {
    if (agent.exitCode === null && agent.signalCode === null) {
      const exited = new Promise((resolve) => agent.once('exit', resolve));
      agent.kill('SIGKILL');
      await exited;
    }
  }
  await runtime?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

/** Look again until the page shows it (generous, for a loaded 2-core machine). */
function eventually<T>(look: () => Promise<T> | T, message?: string) {
  return expect.poll(look, { timeout: 60_000, interval: 100, message });
}

function tile(page: Page, label: string) {
  return page
    .getByRole('list', { name: 'The fleet' })
    .getByRole('listitem')
    .filter({ has: page.getByText(label, { exact: true }) });
}

describe.skipIf(skipped)('registrar dashboard across a restart of the local runtime', () => {
  it('says it is not live while the runtime is down, then shows the restarted one', async () => {
    const { page } = browser;
    await page.goto(dashboard.url);
    await eventually(() => tile(page, 'Connected').textContent()).toBe('1Connected');
    await eventually(() => page.getByText(/^Live · updated/).count()).toBe(1);
    await browser.screenshot('dashboard-restart-live');

    // Ctrl-C in the runtime's terminal: its store goes away, and local.json with it.
    await runtime?.stop();
    runtime = undefined;
    await eventually(() => page.getByText(/^Not live · showing what was read/).count()).toBe(1);
    await eventually(() =>
      page.getByRole('status').filter({ hasText: 'cannot read the registry' }).count(),
    ).toBeGreaterThan(0);
    expect(await page.getByText(/^Live · updated/).count()).toBe(0);
    await browser.screenshot('dashboard-restart-down');

    // `npm start` again: same data dir, a store on another port, and a second VM connects there.
    await startRuntime();
    await startAgent('10.0.0.2');
    await eventually(() => tile(page, 'Entries').textContent()).toBe('2Entries');
    await eventually(() => page.getByText(/^Live · updated/).count()).toBe(1);
    expect(await page.getByText(/^Not live/).count()).toBe(0);
    expect(await page.getByRole('status').filter({ hasText: 'cannot read' }).count()).toBe(0);
    await browser.screenshot('dashboard-restart-live-again');
  }, 240_000);
});
