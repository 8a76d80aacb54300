import type { GroupResponse, RolloutView } from '../../lib/dashboard-server/api-types.ts';
import { Freshness, Problem } from './common.tsx';
import { clock, count } from './format.ts';
import { useLive } from './live.ts';
import { entriesHref, groupHref, rolloutHref } from './route.ts';

/** One group's data, live: the group page and the rollout page read the same. */
function useGroup(namespace: string, name: string) {
  const query = `namespace=${encodeURIComponent(namespace)}&name=${encodeURIComponent(name)}`;
  return useLive<GroupResponse>(`/api/group?${query}`, `/api/events?view=group&${query}`);
}

function Crumbs({ namespace, name, rollout }: { namespace: string; name: string; rollout?: true }) {
  return (
    <nav aria-label="Breadcrumb" class="crumbs">
      <a href="#/">Overview</a> › <a href={entriesHref(namespace)}>{namespace}</a> ›{' '}
      {rollout ? (
        <>
          <a href={groupHref(namespace, name)}>{name}</a> › <span aria-current="page">rollout</span>
        </>
      ) : (
        <span aria-current="page">{name}</span>
      )}
    </nav>
  );
}

/** A WorkloadGroup: its template, the entries built from it, and its rollout at a glance. */
export function Group({ namespace, name }: { namespace: string; name: string }) {
  const live = useGroup(namespace, name);
  const { data } = live;
  return (
    <main id="main">
      <Crumbs namespace={namespace} name={name} />
      <div class="heading">
        <h1 tabIndex={-1}>WorkloadGroup {name}</h1>
        {data && (
          <Freshness
            fetchedAt={live.fetchedAt}
            readAt={data.readAt}
            what="group"
            problem={live.problem}
          />
        )}
      </div>
      {live.error && <Problem text={live.error} />}
      {live.problem && <Problem text={live.problem} />}
      {!data && !live.error && !live.problem && <p aria-busy="true">Reading the group…</p>}
      {data && !live.error && (
        <div class={`panels ${live.problem ? 'stale' : ''}`}>
          <section class="panel" aria-labelledby="template-title">
            <h2 id="template-title">Template</h2>
            <dl class="facts">
              <dt>Generation</dt>
              <dd>{data.generation}</dd>
              <dt>Service account</dt>
              <dd>{data.serviceAccount}</dd>
              <dt>Network</dt>
              <dd>{data.network}</dd>
              <dt>Probe</dt>
              <dd>{data.probe}</dd>
              <dt>Entries</dt>
              <dd>
                <a href={entriesHref(namespace, { group: name })}>
                  {count(data.rollout.entries)} built from it
                </a>
              </dd>
            </dl>
          </section>
          <section class="panel" aria-labelledby="rollout-title">
            <h2 id="rollout-title">Rollout</h2>
            <RolloutBar rollout={data.rollout} />
            <p>
              <a href={rolloutHref(namespace, name)}>The rollout of generation {data.generation}</a>
            </p>
          </section>
          <section class="panel wide" aria-labelledby="yaml-title">
            <h2 id="yaml-title">WorkloadGroup</h2>
            <p class="note">
              As{' '}
              <code>
                registrar get wg {name} -n {namespace} -o yaml
              </code>{' '}
              prints it.
            </p>
            <pre class="yaml">{data.yaml}</pre>
          </section>
        </div>
      )}
    </main>
  );
}

/** A group's template rollout, as `registrar rollout status wg/NAME` tells it. */
export function Rollout({ namespace, name }: { namespace: string; name: string }) {
  const live = useGroup(namespace, name);
  const { data } = live;
  const rollout = data?.rollout;
  return (
    <main id="main">
      <Crumbs namespace={namespace} name={name} rollout />
      <div class="heading">
        <h1 tabIndex={-1}>Rollout of {name}</h1>
        {data && (
          <Freshness
            fetchedAt={live.fetchedAt}
            readAt={data.readAt}
            what="rollout"
            problem={live.problem}
          />
        )}
      </div>
      {live.error && <Problem text={live.error} />}
      {live.problem && <Problem text={live.problem} />}
      {!data && !live.error && !live.problem && <p aria-busy="true">Reading the rollout…</p>}
      {rollout && !live.error && (
        <section class={`panel ${live.problem ? 'stale' : ''}`} aria-labelledby="progress-title">
          <h2 id="progress-title">Generation {rollout.generation}</h2>
          <RolloutBar rollout={rollout} />
          <dl class="facts">
            <dt>State</dt>
            <dd class={rollout.state === 'paused' ? 'warn' : ''}>{rollout.state}</dd>
            <dt>Pace</dt>
            <dd>{rollout.pace}</dd>
            <dt>Started</dt>
            <dd>{clock(rollout.startedAt)}</dd>
            <dt>Completed</dt>
            <dd>{clock(rollout.completedAt)}</dd>
          </dl>
          {rollout.paused && (
            <p class="note">
              Paused by an operator:{' '}
              <code>
                registrar rollout resume wg/{name} -n {namespace}
              </code>{' '}
              resumes it.
            </p>
          )}
        </section>
      )}
    </main>
  );
}

const PARTS = [
  ['upToDate', 'up to date'],
  ['olderIdentity', 'keeping an older identity'],
  ['pending', 'pending'],
  ['waiting', "waiting for their agent's next connect"],
] as const;

/** The group's entries as one bar: up to date, an older identity, pending, waiting. */
function RolloutBar({ rollout }: { rollout: RolloutView }) {
  const parts = {
    upToDate: rollout.upToDate,
    olderIdentity: rollout.olderIdentity,
    pending: rollout.pending,
    waiting: rollout.waiting,
  };
  const total = Math.max(1, rollout.entries);
  const words = `${count(rollout.upToDate)} of ${count(rollout.entries)} entries up to date${PARTS.slice(
    1,
  )
    .map(([key, text]) => `, ${count(parts[key])} ${text}`)
    .join('')}`;
  return (
    <div class="rollout">
      <div class="cell-bar rollout-bar" role="img" aria-label={words} title={words}>
        {PARTS.filter(([key]) => parts[key] > 0).map(([key]) => (
          <span
            key={key}
            class={`cell-bar-part part-${key}`}
            style={{ width: `${(100 * parts[key]) / total}%` }}
          />
        ))}
      </div>
      <p class="note">{words}.</p>
    </div>
  );
}
