import { useMemo } from 'preact/hooks';
import type { RefusalReport } from '../../lib/dashboard-server/api-types.ts';
import { type ChartSeries, TimeChart } from './chart.tsx';
import { HeaderRow } from './common.tsx';
import { count, SERIES_COLORS } from './format.ts';

/** Refused requests by reason over the last hour, per minute. */
export function RefusalsPanel({
  refusals,
  generatedAt,
}: {
  refusals: RefusalReport;
  generatedAt: number;
}) {
  const chart = useMemo(() => {
    // One time axis for every reason: each period with a count in any of them.
    const times = [...new Set(refusals.series.flatMap((s) => s.points.map(([at]) => at)))].sort(
      (a, b) => a - b,
    );
    const series: ChartSeries[] = refusals.series.slice(0, SERIES_COLORS.length).map((s, i) => {
      const byTime = new Map(s.points);
      return {
        label: s.reason,
        color: SERIES_COLORS[i] as string,
        values: times.map((at) => byTime.get(at) ?? 0),
      };
    });
    const span: [number, number] = [refusals.since / 1000, generatedAt / 1000];
    return { times: times.map((at) => at / 1000), series, span };
  }, [refusals, generatedAt]);
  const total = refusals.series.reduce((sum, s) => sum + s.total, 0);
  const summary = refusals.unavailable
    ? refusals.unavailable
    : total === 0
      ? 'No refused request in the last hour.'
      : `${count(total)} refused in the last hour, most for ${refusals.series[0]?.reason}.`;
  return (
    <section class="panel" aria-labelledby="refusals-title">
      <h2 id="refusals-title">Refused requests</h2>
      <figure>
        <figcaption>
          {summary} <span class="source">Counted by {refusals.source}.</span>
        </figcaption>
        {total > 0 && (
          <TimeChart
            label={`Refused requests by reason over the last hour. ${summary}`}
            height={160}
            {...chart}
          />
        )}
      </figure>
      {total > 0 && (
        <table>
          <caption class="visually-hidden">Refused requests in the last hour, by reason</caption>
          <thead>
            <HeaderRow columns={['Reason', ['Last hour', 'num']]} />
          </thead>
          <tbody>
            {refusals.series.map((s) => (
              <tr key={s.reason}>
                <th scope="row">{s.reason}</th>
                <td class="num">{count(s.total)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
