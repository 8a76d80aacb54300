import { useMemo } from 'preact/hooks';
import type { OverviewResponse } from '../../lib/dashboard-server/api-types.ts';
import { type ChartSeries, TimeChart } from './chart.tsx';
import { HeaderRow } from './common.tsx';
import { COLORS, clock, count, plural } from './format.ts';

/** The sweeper's recent runs: what each checked, deleted and held, and which stopped early. */
export function SweepsPanel({
  sweeps,
  generatedAt,
}: {
  sweeps: OverviewResponse['sweeps'];
  generatedAt: number;
}) {
  const { runs } = sweeps;
  const chart = useMemo(() => {
    const times = runs.map((run) => run.at / 1000);
    const series: ChartSeries[] = [
      { label: 'checked', color: COLORS.blue, values: runs.map((run) => run.checked) },
      { label: 'deleted', color: COLORS.red, values: runs.map((run) => run.deleted) },
      {
        label: 'held or slowed',
        color: COLORS.amber,
        dash: [6, 4],
        values: runs.map((run) => run.held + run.slowed),
      },
      {
        label: 'stopped early',
        color: COLORS.purple,
        pointsOnly: true,
        values: runs.map((run) => (run.stoppedEarly ? run.checked : null)),
      },
    ];
    return { times, series, span: [sweeps.since / 1000, generatedAt / 1000] as [number, number] };
  }, [runs, sweeps.since, generatedAt]);
  const stoppedEarly = runs.filter((run) => run.stoppedEarly).length;
  const deleted = runs.reduce((sum, run) => sum + run.deleted, 0);
  const failed = runs.reduce((sum, run) => sum + run.failed, 0);
  const summary =
    runs.length === 0
      ? 'No sweeper run in the last hour.'
      : `${plural(runs.length, 'run')} in the last hour: ${count(deleted)} deleted, ${plural(stoppedEarly, 'run')} stopped early${failed > 0 ? `, ${count(failed)} operations failed` : ''}.`;
  return (
    <section class="panel wide" aria-labelledby="sweeps-title">
      <h2 id="sweeps-title">Sweeper runs</h2>
      <figure>
        <figcaption>{summary}</figcaption>
        {runs.length > 0 && (
          <TimeChart label={`Sweeper runs over the last hour. ${summary}`} {...chart} />
        )}
      </figure>
      {runs.length > 0 && (
        <details>
          <summary>Runs as a table</summary>
          <div class="table-scroll">
            <table>
              <thead>
                <HeaderRow
                  columns={[
                    'Finished',
                    'Mode',
                    ['Candidates read', 'num'],
                    ['Liveness checks', 'num'],
                    ['Deleted', 'num'],
                    ['Held', 'num'],
                    ['Slowed', 'num'],
                    ['Failed', 'num'],
                    'Stopped early',
                  ]}
                />
              </thead>
              <tbody>
                {[...runs].reverse().map((run) => (
                  <tr key={run.at}>
                    <td>{clock(run.at)}</td>
                    <td>{run.mode}</td>
                    {[
                      run.candidatesRead,
                      run.livenessChecked,
                      run.deleted,
                      run.held,
                      run.slowed,
                      run.failed,
                    ].map((value, i) => (
                      <td class="num" key={i}>
                        {count(value)}
                      </td>
                    ))}
                    <td>{run.stoppedEarly ? 'yes' : 'no'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </details>
      )}
    </section>
  );
}
