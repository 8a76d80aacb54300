import type { CellView, OverviewResponse, Tally } from '../../lib/dashboard-server/api-types.ts';
import { CellBar } from './cell-bar.tsx';
import { Banner, Freshness, HeaderRow, Problem } from './common.tsx';
import { clock, count } from './format.ts';
import { useLive } from './live.ts';
import { RefusalsPanel } from './refusals-panel.tsx';
import { entriesHref } from './route.ts';
import { SweepsPanel } from './sweeps-panel.tsx';

/** The fleet at a glance: per namespace and zone, fail static, the sweeper, refusals. */
export function Overview() {
  const live = useLive<OverviewResponse>('/api/overview', '/api/events?view=overview');
  const { data } = live;
  if (live.error) return <Problem text={live.error} />;
  if (!data) {
    return (
      <main id="main">
        <h1 tabIndex={-1}>Overview</h1>
        {live.problem ? (
          <Problem text={live.problem} />
        ) : (
          <p aria-busy="true">Reading the registry…</p>
        )}
      </main>
    );
  }
  return (
    <main id="main">
      <div class="heading">
        <h1 tabIndex={-1}>Overview</h1>
        <Freshness fetchedAt={live.fetchedAt} readAt={data.entriesReadAt} problem={live.problem} />
      </div>
      {live.problem && <Problem text={live.problem} />}
      {/* A banner says what the sweeper does now: not shown from a read that is no longer live. */}
      {data.banner && !live.problem && <Banner banner={data.banner} />}
      <div class={live.problem ? 'stale' : ''}>
        <Tiles fleet={data.fleet} />
        {!data.namespacesComplete && (
          <p class="note">
            Some namespaces may be missing: this table's namespace index predates the registry's.
            Run <code>registrar get we -A</code> once to complete it.
          </p>
        )}
        <div class="panels">
          <section class="panel wide" aria-labelledby="cells-title">
            <h2 id="cells-title">Namespaces and zones</h2>
            <CellsTable cells={data.cells} />
          </section>
          <section class="panel" aria-labelledby="failstatic-title">
            <h2 id="failstatic-title">Fail static</h2>
            <FailStatic failStatic={data.failStatic} />
          </section>
          <RefusalsPanel refusals={data.refusals} generatedAt={data.generatedAt} />
          <SweepsPanel sweeps={data.sweeps} generatedAt={data.generatedAt} />
        </div>
      </div>
    </main>
  );
}

function Tiles({ fleet }: { fleet: Tally }) {
  const tiles: [string, number, string][] = [
    ['Entries', fleet.entries, ''],
    ['Connected', fleet.connected, 'ok'],
    ['Healthy', fleet.healthy, 'ok'],
    ['Unhealthy', fleet.unhealthy, fleet.unhealthy > 0 ? 'bad' : ''],
    ['Away', fleet.away, fleet.away > 0 ? 'warn' : ''],
    ['Hand-made', fleet.handMade, ''],
  ];
  return (
    <ul class="tiles" aria-label="The fleet">
      {tiles.map(([label, value, tone]) => (
        <li class={`tile ${tone}`} key={label}>
          <span class="tile-value">{count(value)}</span>
          <span class="tile-label">{label}</span>
        </li>
      ))}
    </ul>
  );
}

function CellsTable({ cells }: { cells: CellView[] }) {
  if (cells.length === 0) {
    return <p>No entries yet. Apply a WorkloadGroup and start an agent (README, quick start).</p>;
  }
  return (
    <div class="table-scroll">
      <table>
        <caption class="visually-hidden">
          Entries per namespace and zone, and what the sweeper does there
        </caption>
        <thead>
          <HeaderRow
            columns={[
              'Namespace',
              'Zone',
              ['Entries', 'num'],
              ['Connected', 'num'],
              ['Healthy', 'num'],
              ['Unhealthy', 'num'],
              ['Away', 'num'],
              'Share',
              'Deletions',
            ]}
          />
        </thead>
        <tbody>
          {cells.map((cell) => (
            <tr key={`${cell.namespace}#${cell.zone}`}>
              <th scope="row">
                <a href={entriesHref(cell.namespace)}>{cell.namespace}</a>
              </th>
              <td>{cell.zone}</td>
              <td class="num">{count(cell.entries)}</td>
              <td class="num">{count(cell.connected)}</td>
              <td class="num">{count(cell.healthy)}</td>
              <LinkedCount
                value={cell.unhealthy}
                tone="bad"
                href={entriesHref(cell.namespace, { health: 'unhealthy' })}
              />
              <LinkedCount
                value={cell.away}
                tone="warn"
                href={entriesHref(cell.namespace, { connection: 'disconnected' })}
              />
              <td class="bar-cell">
                <CellBar tally={cell} where={`${cell.namespace} in ${cell.zone}`} />
              </td>
              <td>
                <span class={`state state-${cell.failStatic.state}`}>{cell.failStatic.state}</span>
                {cell.failStatic.note && <span class="until"> ({cell.failStatic.note})</span>}
                {cell.failStatic.until && cell.failStatic.state !== 'normal' && (
                  <span class="until"> until {clock(cell.failStatic.until)}</span>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A count that, when not zero, links to the entries it counts. */
function LinkedCount({ value, tone, href }: { value: number; tone: string; href: string }) {
  return (
    <td class={`num ${value > 0 ? tone : ''}`}>
      {value > 0 ? <a href={href}>{count(value)}</a> : '0'}
    </td>
  );
}

function FailStatic({ failStatic }: { failStatic: OverviewResponse['failStatic'] }) {
  if (failStatic.evaluatedAt === null) {
    return <p>The sweeper has not judged the fleet yet (it runs every sweep interval).</p>;
  }
  return (
    <dl class="facts">
      <dt>Mode</dt>
      <dd>
        <span class={`state state-${failStatic.mode}`}>{failStatic.mode}</span>
      </dd>
      <dt>Since</dt>
      <dd>{clock(failStatic.since)}</dd>
      {failStatic.why && (
        <>
          <dt>Why</dt>
          <dd>{failStatic.why}</dd>
        </>
      )}
      {failStatic.holdUntil && (
        <>
          <dt>Until</dt>
          <dd>{clock(failStatic.holdUntil)} at the latest</dd>
        </>
      )}
      {failStatic.heldNamespaces && (
        <>
          <dt>Held</dt>
          <dd>{failStatic.heldNamespaces.join(', ')}</dd>
        </>
      )}
      {failStatic.releasedAt && (
        <>
          <dt>Released</dt>
          <dd>{clock(failStatic.releasedAt)}</dd>
        </>
      )}
      <dt>Judged</dt>
      <dd>{clock(failStatic.evaluatedAt)} (the sweeper's last run)</dd>
    </dl>
  );
}
