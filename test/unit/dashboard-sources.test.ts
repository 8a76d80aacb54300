import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { browserCommand } from '../../cli/commands/dashboard-browser.ts';
import { RefusalTally, startRefusalTally } from '../../infra/local/refusal-tally.ts';
import { DashboardData } from '../../lib/dashboard-server/dashboard-data.ts';
import { isLoopbackAddress } from '../../lib/dashboard-server/defaults.ts';
import { REFUSALS_FILE } from '../../lib/dashboard-server/refusal-tally-file.ts';
import {
  cloudWatchRefusals,
  localRefusals,
  type MetricDataClient,
} from '../../lib/dashboard-server/refusals.ts';
import { countRefusal } from '../../lib/observability.ts';

/** Where the dashboard's numbers come from besides the table, and how it opens a browser. */
const T0 = Date.parse('2026-03-01T12:00:00Z');
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function tempDir() {
  const dir = mkdtempSync(join(tmpdir(), 'dashboard-sources-'));
  dirs.push(dir);
  return dir;
}

describe("the local runtime's refusal counts", () => {
  it('counts by reason per minute, and keeps the last hour only', () => {
    const tally = new RefusalTally(T0);
    tally.add('Unauthenticated', T0);
    tally.add('Unauthenticated', T0 + 30_000);
    tally.add('NotFound', T0 + 61_000);
    expect(tally.snapshot().buckets).toEqual([
      [T0, { Unauthenticated: 2 }],
      [T0 + 60_000, { NotFound: 1 }],
    ]);
    tally.add('Forbidden', T0 + 60 * 60_000);
    expect(tally.snapshot().buckets.map(([at]) => at)).toEqual([T0 + 60_000, T0 + 60 * 60_000]);
  });

  it('hears every refusal the functions count, writes them beside local.json, and removes the file when stopped', async () => {
    const dir = tempDir();
    const stop = await startRefusalTally(dir, () => T0, 20);
    countRefusal('AddressInUse');
    countRefusal('AddressInUse');
    const path = join(dir, REFUSALS_FILE);
    await expect
      .poll(() => JSON.parse(readFileSync(path, 'utf8')).buckets, { timeout: 5_000 })
      .toEqual([[T0, { AddressInUse: 2 }]]);
    const report = await localRefusals(path).read(T0 + 60_000);
    expect(report.series).toEqual([{ reason: 'AddressInUse', total: 2, points: [[T0, 2]] }]);
    await stop();
    countRefusal('AddressInUse'); // no longer heard
    expect(() => readFileSync(path)).toThrow(/ENOENT/);
    expect((await localRefusals(path).read(T0)).unavailable).toMatch(
      /no refusal counts at .*refusals\.json: the local runtime writes them while it runs/,
    );
  });

  it('ignores a file it cannot read rather than showing made-up counts', async () => {
    const path = join(tempDir(), REFUSALS_FILE);
    writeFileSync(path, '{"buckets": [["yesterday", {"x": "many"}]]}');
    expect((await localRefusals(path).read(T0)).series).toEqual([]);
  });
});

describe('refusals from CloudWatch', () => {
  // A stand-in for CloudWatch's GetMetricData (no AWS account here): the boundary only.
  function client(answer: Awaited<ReturnType<MetricDataClient['getMetricData']>> | Error) {
    const calls: Parameters<MetricDataClient['getMetricData']>[0][] = [];
    return {
      calls,
      client: {
        getMetricData: async (input: Parameters<MetricDataClient['getMetricData']>[0]) => {
          calls.push(input);
          if (answer instanceof Error) throw answer;
          return answer;
        },
      } satisfies MetricDataClient,
    };
  }

  it('asks for the Refused metric by Reason over the last hour, one series per reason', async () => {
    const stub = client({
      MetricDataResults: [
        {
          Label: 'Forbidden',
          Timestamps: [new Date(T0 - 60_000), new Date(T0 - 120_000)],
          Values: [2, 1],
        },
        { Label: 'Unauthenticated', Timestamps: [new Date(T0 - 60_000)], Values: [7] },
        { Label: 'Quiet', Timestamps: [new Date(T0 - 60_000)], Values: [0] },
      ],
    });
    const report = await cloudWatchRefusals(stub.client, 'eu-west-1').read(T0);
    expect(stub.calls).toEqual([
      {
        StartTime: new Date(T0 - 3_600_000),
        EndTime: new Date(T0),
        MetricDataQueries: [
          {
            Id: 'refused',
            Expression:
              'SELECT SUM(Refused) FROM SCHEMA("WorkloadRegistrar", Reason, service) GROUP BY Reason',
            Period: 60,
            ReturnData: true,
          },
        ],
      },
    ]);
    expect(report.source).toBe('CloudWatch (WorkloadRegistrar/Refused, eu-west-1)');
    expect(report.series).toEqual([
      { reason: 'Unauthenticated', total: 7, points: [[T0 - 60_000, 7]] },
      {
        reason: 'Forbidden',
        total: 3,
        points: [
          [T0 - 120_000, 1],
          [T0 - 60_000, 2],
        ],
      },
    ]);
  });

  it('says why when CloudWatch refuses, instead of showing no refusals', async () => {
    const stub = client(new Error('User is not authorized to perform: cloudwatch:GetMetricData'));
    const report = await cloudWatchRefusals(stub.client, 'eu-west-1').read(T0);
    expect(report.series).toEqual([]);
    expect(report.unavailable).toMatch(
      /^could not read CloudWatch: User is not authorized.*needs cloudwatch:GetMetricData/,
    );
  });
});

describe('opening a browser', () => {
  const URL = 'http://127.0.0.1:8090/';
  const none = () => false;
  const all = () => true;

  it('uses $BROWSER when set', () => {
    expect(browserCommand(URL, 'linux', { BROWSER: 'firefox --new-window' }, none)).toEqual({
      command: 'firefox',
      args: ['--new-window', URL],
    });
  });

  it("uses the system's opener on macOS, Windows and a Linux desktop", () => {
    expect(browserCommand(URL, 'darwin', {}, none)).toEqual({ command: 'open', args: [URL] });
    expect(browserCommand(URL, 'win32', {}, none)?.command).toBe('cmd');
    expect(browserCommand(URL, 'linux', { DISPLAY: ':0' }, all)).toEqual({
      command: 'xdg-open',
      args: [URL],
    });
  });

  it('opens none on a server or over SSH without a display', () => {
    expect(browserCommand(URL, 'linux', {}, all)).toBeUndefined();
    expect(browserCommand(URL, 'linux', { DISPLAY: ':0' }, none)).toBeUndefined();
  });
});

describe('loopback addresses', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.8.9.10', true],
    ['::1', true],
    ['::ffff:127.0.0.1', true],
    ['0.0.0.0', false],
    ['::', false],
    ['10.0.0.5', false],
    ['128.0.0.1', false],
  ])('%s is loopback: %s', (address, loopback) => {
    expect(isLoopbackAddress(address)).toBe(loopback);
  });
});

describe('how often the dashboard reads the refusals', () => {
  // In-memory stand-ins for the table's reads: this is about the cadence of the refusal source.
  function data(source: 'billed' | 'local') {
    let now = T0;
    let reads = 0;
    const refusals = {
      ...(source === 'billed' ? { everyMs: 60_000 } : {}),
      read: async (at: number) => {
        reads++;
        return { source, since: at - 3_600_000, periodMs: 60_000, series: [] };
      },
    };
    const dashboard = new DashboardData(
      {
        catalog: {
          listNamespaces: async () => ({ namespaces: [], complete: true }),
          listEntries: async () => [],
          getEntry: async () => undefined,
        },
        disruption: { zoneCounts: async () => [], disruptionRecord: async () => undefined },
        sweepRuns: { recent: async () => [] },
        refusals,
        target: 'test',
        now: () => now,
      },
      5_000,
    );
    return {
      dashboard,
      reads: () => reads,
      advance: (ms: number) => {
        now += ms;
      },
    };
  }

  it('reads CloudWatch once a minute at most, whatever the refresh', async () => {
    const d = data('billed');
    await d.dashboard.overview(true);
    for (let i = 0; i < 11; i++) {
      d.advance(5_000);
      await d.dashboard.overview(true);
    }
    expect(d.reads()).toBe(1);
    d.advance(5_000);
    await d.dashboard.overview(true);
    expect(d.reads()).toBe(2);
  });

  it("reads the local runtime's counts at every refresh", async () => {
    const d = data('local');
    await d.dashboard.overview(true);
    d.advance(5_000);
    await d.dashboard.overview(true);
    expect(d.reads()).toBe(2);
  });
});
