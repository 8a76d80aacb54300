import type { EntryResponse } from '../../lib/dashboard-server/api-types.ts';
import { Freshness, HeaderRow, Problem } from './common.tsx';
import { clock } from './format.ts';
import { HealthTimeline } from './health-timeline.tsx';
import { useLive } from './live.ts';
import { entriesHref } from './route.ts';

/** One VM: its WorkloadEntry, holders, Healthy condition and events, live. */
export function Entry({ namespace, name }: { namespace: string; name: string }) {
  const query = `namespace=${encodeURIComponent(namespace)}&name=${encodeURIComponent(name)}`;
  const live = useLive<EntryResponse>(`/api/entry?${query}`, `/api/events?view=entry&${query}`);
  const { data } = live;
  return (
    <main id="main">
      <nav aria-label="Breadcrumb" class="crumbs">
        <a href="#/">Overview</a> › <a href={entriesHref(namespace)}>{namespace}</a> ›{' '}
        <span aria-current="page">{name}</span>
      </nav>
      <div class="heading">
        <h1 tabIndex={-1}>{name}</h1>
        {data && (
          <Freshness
            fetchedAt={live.fetchedAt}
            readAt={data.readAt}
            what="entry"
            problem={live.problem}
          />
        )}
      </div>
      {live.error && (
        <Problem
          text={`${live.error}. The sweeper deletes an entry once its VM stayed away past the grace period.`}
        />
      )}
      {live.problem && <Problem text={live.problem} />}
      {!data && !live.error && !live.problem && <p aria-busy="true">Reading the entry…</p>}
      {data && !live.error && <EntryBody data={data} />}
    </main>
  );
}

function EntryBody({ data }: { data: EntryResponse }) {
  const healthy = data.healthy;
  return (
    <div class="panels">
      <section class="panel" aria-labelledby="summary-title">
        <h2 id="summary-title">Connection</h2>
        <dl class="facts">
          <dt>Connected</dt>
          <dd class={data.connected === 'False' ? 'warn' : ''}>{data.connected}</dd>
          <dt>Group</dt>
          <dd>{data.group ?? '<none> (hand-made)'}</dd>
          <dt>Identity</dt>
          <dd class="identity">{data.identity ?? '<none>'}</dd>
        </dl>
        <h3>Holders</h3>
        {data.holders.length === 0 ? (
          <p>No connection holds this entry.</p>
        ) : (
          <table>
            <thead>
              <HeaderRow columns={['Connection', 'Connected', 'Age']} />
            </thead>
            <tbody>
              {data.holders.map((holder) => (
                <tr key={holder.connectionId}>
                  <td>
                    <code>{holder.connectionId}</code>
                    {holder.newest && ' (newest)'}
                  </td>
                  <td>{holder.since === null ? '<unknown>' : clock(holder.since)}</td>
                  <td>{holder.age}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section class="panel" aria-labelledby="healthy-title">
        <h2 id="healthy-title">Healthy condition</h2>
        {healthy === null ? (
          <p>
            No verdict yet: the agent reports only once its probe has one (or the group has no
            probe).
          </p>
        ) : (
          <dl class="facts">
            <dt>Status</dt>
            <dd class={healthy.status === 'False' ? 'bad' : 'ok'}>{healthy.status}</dd>
            {healthy.reason && (
              <>
                <dt>Reason</dt>
                <dd>{healthy.reason}</dd>
              </>
            )}
            {healthy.message && (
              <>
                <dt>Message</dt>
                <dd>{healthy.message}</dd>
              </>
            )}
            <dt>Last probe</dt>
            <dd>{clock(healthy.lastProbeTime)}</dd>
            <dt>Last transition</dt>
            <dd>{clock(healthy.lastTransitionTime)}</dd>
          </dl>
        )}
      </section>
      <section class="panel wide" aria-labelledby="timeline-title">
        <h2 id="timeline-title">Health over time</h2>
        <HealthTimeline events={data.events} now={data.readAt} />
      </section>
      <section class="panel wide" aria-labelledby="events-title">
        <h2 id="events-title">Events</h2>
        {data.events.length === 0 ? (
          <p>No events.</p>
        ) : (
          <div class="table-scroll">
            <table>
              <thead>
                <HeaderRow columns={['Type', 'Reason', 'Age', 'From', 'Message']} />
              </thead>
              <tbody>
                {data.events.map((event) => (
                  <tr
                    key={`${event.reason}-${event.at}`}
                    class={event.type === 'Warning' ? 'warning' : ''}
                  >
                    <td>{event.type}</td>
                    <td>{event.reason}</td>
                    <td title={clock(event.at)}>{event.age}</td>
                    <td>{event.from}</td>
                    <td>{event.message}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <section class="panel wide" aria-labelledby="yaml-title">
        <h2 id="yaml-title">WorkloadEntry</h2>
        <p class="note">
          As{' '}
          <code>
            registrar get we {data.name} -n {data.namespace} -o yaml
          </code>{' '}
          prints it.
        </p>
        {/* Chromium and Firefox let the keyboard scroll an overflowing block by themselves. */}
        <pre class="yaml">{data.yaml}</pre>
      </section>
    </div>
  );
}
