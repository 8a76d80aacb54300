import { type ChildProcess, spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OverviewResponse } from '../../lib/dashboard-server/api-types.ts';
import { type HttpTarget, startHttpTarget } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, startAgentTestbed } from '../fixtures/agent-testbed.ts';
import { type DashboardCli, startDashboardCli } from '../fixtures/dashboard-cli.ts';
import {
  browserTestSkip,
  type HeadlessBrowser,
  launchChromium,
} from '../fixtures/headless-chromium.ts';
import { refusedUpgrade } from '../fixtures/websocket-client.ts';

/**
 * `registrar dashboard` in Debian's Chromium, as an operator uses it: the local runtime (real
 * gateway, handlers, sweeper and dynalite), five real agent processes that probe a real HTTP
 * server, and the dashboard command itself. The test reads the page as a person does, by role
 * and visible text, and waits for what a person waits for; nothing reloads the page, so every
 * change it sees came by the live updates. A screenshot of each state goes to
 * .test-results/screenshots (REGISTRAR_DOCS_SCREENSHOT=1 also rewrites docs/dashboard.png).
 */

// Long enough for the page to show a crashed VM away before the sweeper deletes it, also when a
// loaded machine slows the reads (the dashboard reads no more often than 20 x a read's time).
// Long enough that a loaded machine's dashboard (refreshing every 500 ms, reading the namespace
// each time) shows a crashed VM before the sweeper deletes it: at 8 s a full suite's load once
// hid the whole window.
const GRACE_MS = 20_000;
const ZONE = 'us-east-1/us-east-1a';
const IPS = ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.5'];

let dataDir: string;
let bed: AgentTestbed;
let probeTarget: HttpTarget;
let dashboard: DashboardCli;
let browser: HeadlessBrowser;
const agents = new Map<string, ChildProcess>();
/** Every URL the page asked for: nothing may come from anywhere but the dashboard. */
const requested: string[] = [];

function startAgent(ip: string, tier: string): ChildProcess {
  const child = spawn(
    process.execPath,
    [
      'bin/registrar-agent.js',
      '--url',
      bed.runtime.url,
      '--group',
      'web',
      '--namespace',
      'shop',
      '--ip',
      ip,
      '--locality',
      `${ZONE}/rack-1`,
      '--label',
      `tier=${tier}`,
      '--no-imds',
      '--probe-time-scale',
      '0.5',
    ],
    { env: { ...process.env, REGISTRAR_AGENT_TOKEN: bed.token }, stdio: 'ignore' },
  );
  agents.set(ip, child);
  return child;
}

/** A crash: the VM is gone at once, no close frame, no drain. */
async function crash(ip: string): Promise<void> {
  const child = agents.get(ip);
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

const skipped = browserTestSkip() !== undefined;

beforeAll(async () => {
  if (skipped) return;
  dataDir = mkdtempSync(join(tmpdir(), 'dashboard-browser-'));
  probeTarget = await startHttpTarget(200);
  bed = await startAgentTestbed({
    dataDir,
    writeLocalJson: true,
    gracePeriodMs: GRACE_MS,
    sweepIntervalMs: 1_000,
  });
  // Generous timeouts (scaled by the agents' --probe-time-scale): a loaded 2-core machine must
  // not turn a VM unhealthy because its probe answered late.
  await bed.applyGroup('web', {
    httpGet: { path: '/healthz', port: probeTarget.port, host: '127.0.0.1' },
    periodSeconds: 1,
    timeoutSeconds: 10,
    failureThreshold: 3,
  });
  for (const [i, ip] of IPS.entries()) startAgent(ip, `t${i + 1}`);
  dashboard = await startDashboardCli(['--port', '0', '--refresh', '500ms'], {
    ...process.env,
    REGISTRAR_DATA_DIR: dataDir,
    REGISTRAR_TABLE: undefined,
    REGISTRAR_DYNAMODB_ENDPOINT: undefined,
  });
  browser = await launchChromium({ width: 1366, height: 900 });
  browser.page.on('request', (request) => requested.push(request.url()));
}, 90_000);

afterAll(async () => {
  await browser?.close();
  const code = await dashboard?.stop();
  for (const ip of agents.keys()) await crash(ip);
  await bed?.close();
  await probeTarget?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  // Stopped by Ctrl-C: 130, as a shell reports SIGINT.
  if (dashboard) expect(code).toBe(130);
}, 60_000);

/**
 * What a person does: look again until the page shows it. Generous, for a loaded 2-core machine
 * (vitest's own default is one second); a failure still names what was last seen.
 */
function eventually<T>(look: () => Promise<T> | T, message?: string) {
  return expect.poll(look, { timeout: 60_000, interval: 100, message });
}

/** The number a tile of the overview shows. */
function tile(page: Page, label: string) {
  return page
    .getByRole('list', { name: 'The fleet' })
    .getByRole('listitem')
    .filter({ has: page.getByText(label, { exact: true }) });
}

function entryRow(page: Page, name: string) {
  return page.getByRole('row').filter({ has: page.getByRole('rowheader', { name, exact: true }) });
}

describe.skipIf(skipped)('registrar dashboard in a real browser', () => {
  it('the overview shows what the registry holds, and the refusals', async () => {
    const { page } = browser;
    await page.goto(dashboard.url);
    await eventually(() => tile(page, 'Connected').textContent()).toBe('5Connected');
    await eventually(() => tile(page, 'Healthy').textContent()).toBe('5Healthy');
    const cell = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'shop' }) });
    await eventually(() => cell.getByRole('cell').allTextContents()).toEqual([
      ZONE,
      '5',
      '5',
      '5',
      '0',
      '0',
      '',
      'normal',
    ]);
    // The row's bar says the same at a glance; its name says it in words.
    await eventually(() =>
      page
        .getByRole('img', {
          name: `shop in ${ZONE}: 5 healthy, 0 connected without a verdict, 0 unhealthy, 0 away`,
        })
        .count(),
    ).toBe(1);
    // One time format on the page: RFC 3339 in UTC to the second, as the CLI prints times.
    const fact = (term: string) =>
      page.getByRole('term').filter({ hasText: term }).locator('xpath=following-sibling::dd[1]');
    await eventually(() => fact('Judged').textContent()).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(the sweeper's last run\)$/,
    );
    await eventually(() => page.getByText(/^Live · updated /).textContent()).toMatch(
      /^Live · updated \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ · entries read \d{4}-\S+Z$/,
    );
    expect(await page.getByText(/\d\d:\d\d:\d\d [AP]M|\.\d{3}Z/).count()).toBe(0);
    await eventually(() => page.getByText(/\d+ runs? in the last hour/).count()).toBe(1);

    // A connect to a group that does not exist: refused (404), counted by reason, nothing written.
    const refusal = await refusedUpgrade(
      `${bed.runtime.url}/?group=nope&namespace=shop&ip=10.9.9.9`,
      { Authorization: `Bearer ${bed.token}` },
    );
    expect(refusal.statusCode).toBe(404);
    const refusals = page.getByRole('table', {
      name: 'Refused requests in the last hour, by reason',
    });
    await eventually(() => refusals.getByRole('row', { name: /NotFound/ }).textContent()).toBe(
      'NotFound1',
    );
    await browser.screenshot('dashboard-overview');
    if (process.env.REGISTRAR_DOCS_SCREENSHOT) {
      copyFileSync(await browser.screenshot('dashboard-overview'), 'docs/dashboard.png');
    }
  }, 180_000);

  it('a filter narrows the list, typed and submitted with the keyboard', async () => {
    const { page } = browser;
    await page.getByRole('link', { name: 'shop' }).click();
    await eventually(() =>
      page.getByText('5 entries', { exact: false }).first().textContent(),
    ).toMatch(/^5 entries/);
    await eventually(() => page.getByRole('rowheader').count()).toBe(5);

    await page.getByRole('textbox', { name: 'Label selector' }).focus();
    await page.keyboard.type('tier=t2');
    await page.keyboard.press('Enter');
    await eventually(() => page.getByRole('rowheader').allTextContents()).toEqual(['web-10.0.0.2']);
    // The agent's version, as `get we -o wide` prints it in its AGENT column.
    await expect(page.getByRole('columnheader', { name: /^AGENT/ }).count()).resolves.toBe(1);
    await eventually(() =>
      entryRow(page, 'web-10.0.0.2').getByRole('cell').last().textContent(),
    ).toMatch(/^\d+\.\d+\.\d+/);
    await expect(page.getByText('1 of 5 entries match').count()).resolves.toBe(1);
    expect(page.url()).toContain('selector=tier%3Dt2');
    await browser.screenshot('dashboard-entries-filtered');

    // A selector the registry cannot read is refused with the reason, on the page.
    await page.getByRole('textbox', { name: 'Label selector' }).fill('tier in (a,b)');
    await page.getByRole('button', { name: 'Apply' }).click();
    await eventually(() => page.getByRole('status').filter({ hasText: 'set-based' }).count()).toBe(
      1,
    );

    await page.getByRole('button', { name: 'Clear filters' }).click();
    await eventually(() => page.getByRole('rowheader').count()).toBe(5);

    // Sorted on the server, by a column header (a button, so the keyboard reaches it too); the
    // second click reverses the order the first one asked for.
    const addressHeader = page.getByRole('columnheader', { name: /^ADDRESS/ });
    await page.getByRole('button', { name: /^ADDRESS/ }).click();
    await eventually(() => addressHeader.getAttribute('aria-sort')).toBe('ascending');
    await page.getByRole('button', { name: /^ADDRESS/ }).click();
    await eventually(() => addressHeader.getAttribute('aria-sort')).toBe('descending');
    await eventually(() => page.getByRole('rowheader').first().textContent()).toBe('web-10.0.0.5');
    // A fast double click: the second click reverses the order the first asked for, though the
    // page still shows the rows sorted by ADDRESS.
    const nameHeader = page.getByRole('columnheader', { name: /^NAME/ });
    await page.getByRole('button', { name: /^NAME/ }).dblclick();
    await eventually(() => nameHeader.getAttribute('aria-sort')).toBe('descending');
    expect(page.url()).toMatch(/sort=name&order=desc/);
    await browser.screenshot('dashboard-entries');
  }, 180_000);

  it('one VM: its YAML, holders, Healthy condition and events', async () => {
    const { page } = browser;
    await page.getByRole('link', { name: 'web-10.0.0.1', exact: true }).click();
    await eventually(() => page.getByRole('heading', { level: 1 }).textContent()).toBe(
      'web-10.0.0.1',
    );
    const yaml = page.getByText(/^apiVersion: networking\.istio\.io\/v1/);
    await eventually(() => yaml.textContent()).toMatch(/\n {2}address: 10\.0\.0\.1\n/);
    const holders = page.getByRole('region', { name: 'Connection' }).getByRole('row');
    // One connection holds it (two for a moment when the agent rotates or reconnects).
    const newest = holders.filter({ hasText: '(newest)' });
    await eventually(() => newest.count()).toBe(1);
    await eventually(() => newest.textContent()).toMatch(/\(newest\).*\d+s$/);
    const healthy = page.getByRole('region', { name: 'Healthy condition' });
    await eventually(() => healthy.getByRole('definition').first().textContent()).toBe('True');
    const events = page.getByRole('region', { name: 'Events' });
    await eventually(() =>
      events.getByRole('cell', { name: 'Registered', exact: true }).count(),
    ).toBe(1);
    await eventually(() => events.getByRole('cell', { name: 'Healthy', exact: true }).count()).toBe(
      1,
    );
    // The same story as a strip: healthy since the probe first passed.
    await eventually(
      async () =>
        (await page.getByRole('img', { name: /^Health over time:/ }).getAttribute('aria-label')) ??
        '',
    ).toMatch(/^Health over time: (connected, no verdict from \S+Z; )?healthy from \S+Z$/);
    await browser.screenshot('dashboard-entry');
  }, 180_000);

  it("a group's page, and its rollout's, from an entry's GROUP", async () => {
    const { page } = browser;
    await page.getByRole('link', { name: 'shop', exact: true }).click();
    await entryRow(page, 'web-10.0.0.1').getByRole('link', { name: 'web', exact: true }).click();
    await eventually(() => page.getByRole('heading', { level: 1 }).textContent()).toBe(
      'WorkloadGroup web',
    );
    const template = page.getByRole('region', { name: 'Template' });
    await eventually(() => template.getByRole('link').textContent()).toBe('5 built from it');
    await eventually(() =>
      page.getByText(/^apiVersion: networking\.istio\.io\/v1/).textContent(),
    ).toMatch(/\nkind: WorkloadGroup\n/);
    const bar = page.getByRole('img', { name: /^\d+ of 5 entries up to date/ });
    await eventually(() => bar.getAttribute('aria-label')).toBe(
      "5 of 5 entries up to date, 0 keeping an older identity, 0 pending, 0 waiting for their agent's next connect",
    );
    await browser.screenshot('dashboard-group');

    await page.getByRole('link', { name: 'The rollout of generation 1' }).click();
    await eventually(() => page.getByRole('heading', { level: 1 }).textContent()).toBe(
      'Rollout of web',
    );
    const fact = (term: string) =>
      page.getByRole('term').filter({ hasText: term }).locator('xpath=following-sibling::dd[1]');
    await eventually(() => fact('State').textContent()).toBe('complete');
    await eventually(() =>
      page.getByRole('img', { name: /^5 of 5 entries up to date/ }).count(),
    ).toBe(1);
    await browser.screenshot('dashboard-rollout');
  }, 180_000);

  it('a VM that crashes turns away, then disappears, without a reload', async () => {
    const { page } = browser;
    await page.getByRole('link', { name: 'shop', exact: true }).click();
    const row = entryRow(page, 'web-10.0.0.1');
    await eventually(() => row.getByRole('cell').nth(1).textContent()).toBe('True');
    const navigations: string[] = [];
    page.on('framenavigated', (frame) => navigations.push(frame.url()));

    // What the row's Healthy cell shows, recorded by the page itself on every change: the
    // disconnected state lasts one grace period, and on a loaded machine a look from here (a
    // round trip to Chromium each) once missed all of it, then waited on a row already swept.
    // Runs in the page, as a string (this file is type-checked for Node).
    await page.evaluate(`{
      const shown = [];
      const record = () => {
        for (const tr of document.querySelectorAll('tr')) {
          if (tr.querySelector('th')?.textContent?.trim() !== ${JSON.stringify('web-10.0.0.1')}) continue;
          const healthy = tr.querySelectorAll('td')[1]?.textContent ?? '';
          if (shown.at(-1) !== healthy) shown.push(healthy);
        }
      };
      new MutationObserver(record).observe(document.body, {
        subtree: true, childList: true, characterData: true,
      });
      record();
      window.healthyShown = shown;
    }`);
    const healthyShown = () => page.evaluate<string[]>('window.healthyShown');

    await crash('10.0.0.1');
    await eventually(healthyShown).toContain('False');
    await browser.screenshot('dashboard-entries-crashed');
    // Swept after the grace period: the row goes.
    await eventually(() => row.count()).toBe(0);
    await eventually(() => page.getByRole('rowheader').count()).toBe(4);
    await browser.screenshot('dashboard-entries-swept');
    expect(navigations).toEqual([]);
    // The sweeper's run that deleted it is on the overview's chart.
    await page.getByRole('link', { name: 'Overview' }).click();
    await eventually(() => page.getByText(/runs? in the last hour/).textContent()).toMatch(
      /: 1 deleted,/,
    );
  }, 180_000);

  it('a fail-static hold shows its banner', async () => {
    const { page } = browser;
    await page.getByRole('link', { name: 'registrar dashboard' }).click();
    // Three of the four left crash at once: more than 55% of the only cell went away abnormally.
    const crashedAt = Date.now();
    await Promise.all(['10.0.0.2', '10.0.0.3', '10.0.0.4'].map(crash));
    const banner = page.getByRole('alert');
    await eventually(() => banner.textContent()).toMatch(
      /^Deletions held in every namespace until \d{4}-\S+Z at the latest\./,
    );
    const cell = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'shop' }) });
    await eventually(() => cell.getByRole('cell').last().textContent()).toMatch(
      /^held until \d{4}-/,
    );
    await eventually(() => tile(page, 'Away').textContent()).toBe('3Away');
    await eventually(() =>
      page
        .getByRole('img', {
          name: `shop in ${ZONE}: 1 healthy, 0 connected without a verdict, 0 unhealthy, 3 away`,
        })
        .count(),
    ).toBe(1);
    await browser.screenshot('dashboard-overview-held');

    // A sweeper run that finished past the grace period held them: read after that run, the
    // registry still holds the three, and so does the page.
    const pastGrace = crashedAt + GRACE_MS;
    await eventually(async () => {
      const overview = (await (
        await fetch(`${dashboard.url}api/overview`)
      ).json()) as OverviewResponse;
      const held = overview.sweeps.runs.find((run) => run.at >= pastGrace && run.mode === 'held');
      return held && (overview.entriesReadAt ?? 0) > held.at
        ? overview.fleet.away
        : 'no such run yet';
    }).toBe(3);
    await eventually(() => tile(page, 'Away').textContent()).toBe('3Away');
    await eventually(() => page.getByText(/runs? in the last hour/).textContent()).toMatch(
      /: 1 deleted,/,
    );
    expect(await page.getByRole('alert').count()).toBe(1);
  }, 180_000);

  it('loaded nothing from anywhere but the dashboard, and holds at laptop and wide-screen sizes', async () => {
    const origin = new URL(dashboard.url).origin;
    const elsewhere = requested.filter(
      (url) => !url.startsWith(origin) && !url.startsWith('data:'),
    );
    expect(elsewhere).toEqual([]);
    const { page } = browser;
    for (const [name, width, height] of [
      ['laptop', 1280, 800],
      ['wide', 2560, 1440],
    ] as const) {
      await page.setViewportSize({ width, height });
      await page.getByRole('heading', { name: 'Namespaces and zones' }).waitFor();
      // Runs in the page, where `document` is the page's (this file is type-checked for Node).
      // The chart follows its box through a ResizeObserver, whose callback runs after the
      // layout that a window resize triggers: the page settles within a frame or two.
      await eventually(
        () =>
          page.evaluate(
            'document.documentElement.scrollWidth - document.documentElement.clientWidth',
          ),
        `${name}: the page is wider than the window`,
      ).toBe(0);
      await browser.screenshot(`dashboard-overview-${name}`);
    }
  }, 180_000);
});
