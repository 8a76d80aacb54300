import { readFile } from 'node:fs/promises';
import { METRIC, METRICS_NAMESPACE } from '../observability.ts';
import type { RefusalReport, RefusalSeries } from './api-types.ts';
import type { RefusalTallyFile } from './refusal-tally-file.ts';

/**
 * Requests the registrar refused, by reason, over the last hour. Nothing in the registry
 * counts them (a refusal writes nothing, so anyone on the internet cannot make the registrar
 * write), so the dashboard reads what already counts them: on AWS, the `Refused` metric by
 * `Reason` that every function emits (CloudWatch, with the CLI's credentials); locally, the
 * counts the local runtime keeps of the same refusals beside its `local.json`.
 */
export interface RefusalSource {
  read(now: number): Promise<RefusalReport>;
  /** Read no more often than this (a source that bills each read); absent: every refresh. */
  everyMs?: number;
}

export const REFUSAL_WINDOW_MS = 60 * 60_000;

/** The local runtime's counts (infra/local/refusal-tally.ts). */
export function localRefusals(path: string): RefusalSource {
  return {
    async read(now) {
      const since = now - REFUSAL_WINDOW_MS;
      const base = { source: 'the local runtime', since, periodMs: 60_000 };
      let file: RefusalTallyFile;
      try {
        file = JSON.parse(await readFile(path, 'utf8')) as RefusalTallyFile;
      } catch {
        return {
          ...base,
          series: [],
          unavailable: `no refusal counts at ${path}: the local runtime writes them while it runs`,
        };
      }
      const byReason = new Map<string, [number, number][]>();
      for (const [at, counts] of file.buckets ?? []) {
        if (typeof at !== 'number' || at < since) continue;
        for (const [reason, count] of Object.entries(counts ?? {})) {
          if (typeof count !== 'number') continue;
          const points = byReason.get(reason) ?? [];
          points.push([at, count]);
          byReason.set(reason, points);
        }
      }
      return { ...base, periodMs: file.bucketMs ?? 60_000, series: seriesOf(byReason) };
    },
  };
}

/** A target that counts nothing the dashboard can read (a DynamoDB at a custom endpoint). */
export function noRefusals(why: string): RefusalSource {
  return {
    read: async (now) => ({
      source: 'none',
      since: now - REFUSAL_WINDOW_MS,
      periodMs: 60_000,
      series: [],
      unavailable: why,
    }),
  };
}

/** What the dashboard needs of CloudWatch: one GetMetricData call. */
export interface MetricDataClient {
  getMetricData(input: {
    StartTime: Date;
    EndTime: Date;
    MetricDataQueries: { Id: string; Expression: string; Period: number; ReturnData: boolean }[];
  }): Promise<{
    MetricDataResults?: { Label?: string; Timestamps?: Date[]; Values?: number[] }[];
  }>;
}

/**
 * The `Refused` metric by `Reason` over the last hour, per minute: one Metrics Insights query
 * (the stack's CloudWatch dashboard draws the same), one series per reason. Needs
 * `cloudwatch:GetMetricData` (billed per metric returned: about one per reason per read).
 */
export function cloudWatchRefusals(client: MetricDataClient, region: string): RefusalSource {
  return {
    // The metric's period: a read within the same minute would return the same points.
    everyMs: 60_000,
    async read(now) {
      const since = now - REFUSAL_WINDOW_MS;
      const base = {
        source: `CloudWatch (${METRICS_NAMESPACE}/${METRIC.refused}, ${region})`,
        since,
        periodMs: 60_000,
      };
      try {
        const answer = await client.getMetricData({
          StartTime: new Date(since),
          EndTime: new Date(now),
          MetricDataQueries: [
            {
              Id: 'refused',
              Expression: `SELECT SUM(${METRIC.refused}) FROM SCHEMA("${METRICS_NAMESPACE}", Reason, service) GROUP BY Reason`,
              Period: 60,
              ReturnData: true,
            },
          ],
        });
        const byReason = new Map<string, [number, number][]>();
        for (const result of answer.MetricDataResults ?? []) {
          const reason = result.Label || 'unknown';
          const times = result.Timestamps ?? [];
          const values = result.Values ?? [];
          const points = times.map((t, i): [number, number] => [t.getTime(), values[i] ?? 0]);
          byReason.set(reason, [...(byReason.get(reason) ?? []), ...points]);
        }
        return { ...base, series: seriesOf(byReason) };
      } catch (error) {
        return {
          ...base,
          series: [],
          unavailable: `could not read CloudWatch: ${error instanceof Error ? error.message : String(error)} (the dashboard needs cloudwatch:GetMetricData)`,
        };
      }
    },
  };
}

/** Most refused first; each series oldest first. */
function seriesOf(byReason: Map<string, [number, number][]>): RefusalSeries[] {
  return [...byReason.entries()]
    .map(([reason, points]) => ({
      reason,
      total: points.reduce((sum, [, count]) => sum + count, 0),
      points: points.sort(([a], [b]) => a - b),
    }))
    .filter((series) => series.total > 0)
    .sort((a, b) => b.total - a.total || a.reason.localeCompare(b.reason));
}

/** The SDK's client, loaded only for a target in AWS. */
export async function awsMetricDataClient(region: string): Promise<MetricDataClient> {
  const { CloudWatchClient, GetMetricDataCommand } = await import('@aws-sdk/client-cloudwatch');
  const client = new CloudWatchClient({ region });
  return {
    getMetricData: (input) => client.send(new GetMetricDataCommand(input)),
  };
}
