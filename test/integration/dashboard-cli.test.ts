import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { OverviewResponse } from '../../lib/dashboard-server/api-types.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { startDashboardCli } from '../fixtures/dashboard-cli.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/** `registrar dashboard` as an operator starts and stops it. */
let dynamo: TestDynamo;
let empty: string;
beforeAll(async () => {
  dynamo = await startTestDynamo();
  empty = mkdtempSync(join(tmpdir(), 'dashboard-cli-'));
});
afterAll(async () => {
  await dynamo?.close();
  rmSync(empty, { recursive: true, force: true });
});

const tableEnv = () => ({
  REGISTRAR_TABLE: dynamo.tableName,
  REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint,
});

describe('registrar dashboard', () => {
  it('serves on loopback, prints its URL, and stops on Ctrl-C (exit 130), leaving nothing open', async () => {
    const dashboard = await startDashboardCli(['--port', '0'], tableEnv());
    expect(dashboard.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(dashboard.stderr()).toContain(
      `reading table '${dynamo.tableName}' at ${dynamo.endpoint}`,
    );
    const overview = (await (
      await fetch(`${dashboard.url}api/overview`)
    ).json()) as OverviewResponse;
    expect(overview.refusals.unavailable).toBe(
      `a table at ${dynamo.endpoint} has no CloudWatch metrics to read refusals from`,
    );
    expect(await dashboard.stop()).toBe(130);
    await expect(fetch(`${dashboard.url}api/overview`)).rejects.toThrow();
  });

  it('refuses a non-loopback address without --allow-remote, and says why it is risky', async () => {
    const run = await captureCli(['dashboard', '--address', '0.0.0.0', '--no-browser'], {
      env: tableEnv(),
    });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /^error: --address 0\.0\.0\.0 is not a loopback address: anyone who can reach it would read every entry \(addresses, labels, identities\) with your credentials, without logging in; pass --allow-remote/,
    );
  });

  it('serves a non-loopback address with --allow-remote, with a warning', async () => {
    const dashboard = await startDashboardCli(
      ['--port', '0', '--address', '0.0.0.0', '--allow-remote'],
      tableEnv(),
    );
    expect(dashboard.stderr()).toMatch(
      /^warning: serving on 0\.0\.0\.0: anyone who can reach this address reads the registry with your credentials; nothing asks them to log in$/m,
    );
    expect((await fetch(`${dashboard.url}api/overview`)).status).toBe(200);
    expect(await dashboard.stop()).toBe(130);
  });

  it.each([
    [
      ['--port', '70000'],
      /error: option '--port <port>' argument '70000' is invalid\. '70000' is not a port/,
    ],
    [['--address', 'example.com'], /'example\.com' is not an IP address/],
    [
      ['--refresh', '0s'],
      /--refresh <duration>' argument '0s' is invalid\. must be a positive duration/,
    ],
  ])('refuses %j with a usage error', async (args, message) => {
    const run = await captureCli(['dashboard', '--no-browser', ...args], { env: tableEnv() });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
  });

  it('without a registry to read, stops before serving and says how to get one', async () => {
    const run = await captureCli(['dashboard', '--no-browser', '--port', '0'], {
      env: {},
      cwd: empty,
    });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /^error: no registry configured: .*start the local runtime with 'npm start'/,
    );
  });
});

describe('registrar dashboard, the program', () => {
  it("opens the operator's browser ($BROWSER) on its URL", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dashboard-browser-'));
    try {
      // A stand-in browser: writes the URL it was asked to open.
      const opened = join(dir, 'opened');
      const browser = join(dir, 'browser.sh');
      writeFileSync(browser, `#!/bin/sh\necho "$@" > ${opened}\n`);
      chmodSync(browser, 0o755);
      const dashboard = await startDashboardCli(
        ['--port', '0'],
        { ...tableEnv(), BROWSER: browser },
        dir,
        {
          browser: true,
        },
      );
      await expect
        .poll(() => existsSync(opened) && readFileSync(opened, 'utf8'), { timeout: 10_000 })
        .toBe(`${dashboard.url}\n`);
      expect(await dashboard.stop()).toBe(130);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('stops on Ctrl-C (SIGINT) as a process, exit 130, its port closed', async () => {
    const child = spawn(
      process.execPath,
      ['bin/registrar.js', 'dashboard', '--port', '0', '--no-browser'],
      {
        env: { ...process.env, ...tableEnv() },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      await expect
        .poll(() => /registrar dashboard: (\S+)/.exec(stdout)?.[1], { timeout: 30_000 })
        .toMatch(/^http:/);
      const url = /registrar dashboard: (\S+)/.exec(stdout)?.[1] as string;
      expect((await fetch(`${url}api/overview`)).status).toBe(200);
      child.kill('SIGINT');
      expect(await exited).toBe(130);
      await expect(fetch(`${url}api/overview`)).rejects.toThrow();
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);
});
