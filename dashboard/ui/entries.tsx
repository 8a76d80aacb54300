import {
  CONNECTION_FILTERS,
  ENTRY_COLUMNS,
  type EntriesResponse,
  type EntryColumn,
  HEALTH_FILTERS,
} from '../../lib/dashboard-server/api-types.ts';
import { Freshness, Problem } from './common.tsx';
import { count } from './format.ts';
import { useLive } from './live.ts';
import { entriesHref, entryHref, groupHref, parseRoute } from './route.ts';

/** Headers as `registrar get we -o wide` prints them. */
const HEADERS: Record<EntryColumn, string> = {
  name: 'NAME',
  address: 'ADDRESS',
  connected: 'CONNECTED',
  healthy: 'HEALTHY',
  routable: 'ROUTABLE',
  group: 'GROUP',
  age: 'AGE',
  network: 'NETWORK',
  locality: 'LOCALITY',
  identity: 'IDENTITY',
  agent: 'AGENT',
};

const FILTERS = ['selector', 'group', 'health', 'connection', 'q'] as const;

/** A namespace's entries: filtered, sorted and paged by the server, live. */
export function Entries({ namespace, params }: { namespace: string; params: URLSearchParams }) {
  const query = new URLSearchParams(params);
  query.set('namespace', namespace);
  const live = useLive<EntriesResponse>(
    `/api/entries?${query}`,
    `/api/events?view=entries&namespace=${encodeURIComponent(namespace)}`,
  );
  const go = (changes: Record<string, string>) => {
    const next = new URLSearchParams(params);
    for (const [key, value] of Object.entries(changes)) {
      if (value === '') next.delete(key);
      else next.set(key, value);
    }
    location.hash = entriesHref(namespace, next);
  };
  const { data } = live;
  return (
    <main id="main">
      <nav aria-label="Breadcrumb" class="crumbs">
        <a href="#/">Overview</a> › <span aria-current="page">{namespace}</span>
      </nav>
      <div class="heading">
        <h1 tabIndex={-1}>Entries in {namespace}</h1>
        {data && (
          <Freshness fetchedAt={live.fetchedAt} readAt={data.readAt} problem={live.problem} />
        )}
      </div>
      {/* Typed text is kept while live updates come in; a new URL starts the form afresh. */}
      <FilterForm key={params.toString()} params={params} groups={data?.groups ?? []} go={go} />
      {live.error && <Problem text={live.error} />}
      {live.problem && <Problem text={live.problem} />}
      {!data && !live.error && !live.problem && <p aria-busy="true">Reading the namespace…</p>}
      {data && (
        <div class={live.problem ? 'stale' : ''}>
          <EntriesTable data={data} namespace={namespace} go={go} />
        </div>
      )}
    </main>
  );
}

function FilterForm({
  params,
  groups,
  go,
}: {
  params: URLSearchParams;
  groups: string[];
  go: (changes: Record<string, string>) => void;
}) {
  const value = (name: string) => params.get(name) ?? '';
  const onSubmit = (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const changes: Record<string, string> = { page: '' };
    for (const name of FILTERS) changes[name] = String(form.get(name) ?? '').trim();
    go(changes);
  };
  const onSelect = (event: Event) => {
    const select = event.currentTarget as HTMLSelectElement;
    go({ [select.name]: select.value, page: '' });
  };
  const active = FILTERS.some((name) => value(name) !== '');
  return (
    <form class="filters" onSubmit={onSubmit} aria-label="Filter entries">
      <label>
        Label selector
        <input
          name="selector"
          defaultValue={value('selector')}
          placeholder="app=web,tier!=canary"
          spellcheck={false}
        />
      </label>
      <label>
        Name contains
        <input name="q" defaultValue={value('q')} spellcheck={false} />
      </label>
      <label>
        Group
        <select name="group" value={value('group')} onChange={onSelect}>
          <option value="">any</option>
          {[...new Set([...groups, value('group')].filter(Boolean))].map((group) => (
            <option key={group} value={group}>
              {group}
            </option>
          ))}
        </select>
      </label>
      <label>
        Health
        <select name="health" value={value('health')} onChange={onSelect}>
          <option value="">any</option>
          {HEALTH_FILTERS.map((health) => (
            <option key={health} value={health}>
              {health}
            </option>
          ))}
        </select>
      </label>
      <label>
        Connection
        <select name="connection" value={value('connection')} onChange={onSelect}>
          <option value="">any</option>
          {CONNECTION_FILTERS.map((connection) => (
            <option key={connection} value={connection}>
              {connection}
            </option>
          ))}
        </select>
      </label>
      <div class="filter-actions">
        <button type="submit">Apply</button>
        {active && (
          <button
            type="button"
            class="secondary"
            onClick={() => go(Object.fromEntries([...FILTERS, 'page'].map((name) => [name, ''])))}
          >
            Clear filters
          </button>
        )}
      </div>
    </form>
  );
}

function EntriesTable({
  data,
  namespace,
  go,
}: {
  data: EntriesResponse;
  namespace: string;
  go: (changes: Record<string, string>) => void;
}) {
  const sortBy = (column: EntryColumn) => {
    // The order asked for last is the URL's, which a click changes at once; the rows on the
    // page follow later. A second click before they arrive reverses what the first asked for.
    const route = parseRoute(location.hash);
    const asked = route.page === 'entries' ? route.params : new URLSearchParams();
    const sort = asked.get('sort') ?? data.sort;
    const order = asked.get('order') ?? data.order;
    go({ sort: column, order: sort === column && order === 'asc' ? 'desc' : 'asc', page: '' });
  };
  const first = data.matched === 0 ? 0 : (data.page - 1) * data.pageSize + 1;
  const last = Math.min(data.matched, data.page * data.pageSize);
  return (
    <>
      <p class="count" role="status">
        {data.partial
          ? `Reading the namespace… showing its first ${count(data.rows.length)} entries by name until then`
          : data.matched === data.total
            ? `${count(data.total)} entries`
            : `${count(data.matched)} of ${count(data.total)} entries match`}
        {data.matched > 0 && !data.partial && ` · showing ${count(first)}–${count(last)}`}
      </p>
      {data.matched === 0 ? (
        <p>No entries match.</p>
      ) : (
        <div class="table-scroll">
          <table class="entries">
            <caption class="visually-hidden">Entries of namespace {namespace}</caption>
            <thead>
              <tr>
                {ENTRY_COLUMNS.map((column) => (
                  <th
                    scope="col"
                    key={column}
                    aria-sort={
                      data.sort === column
                        ? data.order === 'asc'
                          ? 'ascending'
                          : 'descending'
                        : 'none'
                    }
                  >
                    <button type="button" class="sort" onClick={() => sortBy(column)}>
                      {HEADERS[column]}
                      <span aria-hidden="true">
                        {data.sort === column ? (data.order === 'asc' ? ' ▲' : ' ▼') : ''}
                      </span>
                    </button>
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {data.rows.map((row) => (
                <tr key={row.name}>
                  <th scope="row">
                    <a href={entryHref(namespace, row.name)}>{row.name}</a>
                  </th>
                  <td>{row.cells.address}</td>
                  <td class={row.cells.connected === 'False' ? 'warn' : ''}>
                    {row.cells.connected}
                  </td>
                  <td class={row.cells.healthy.startsWith('False') ? 'bad' : ''}>
                    {row.cells.healthy}
                  </td>
                  <td class={row.cells.routable === 'False' ? 'bad' : ''}>{row.cells.routable}</td>
                  <td>
                    {row.cells.group.startsWith('<') ? (
                      row.cells.group
                    ) : (
                      <a href={groupHref(namespace, row.cells.group)}>{row.cells.group}</a>
                    )}
                  </td>
                  <td>{row.cells.age}</td>
                  <td>{row.cells.network}</td>
                  <td>{row.cells.locality}</td>
                  <td class="identity">{row.cells.identity}</td>
                  <td>{row.cells.agent}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {data.pages > 1 && !data.partial && (
        <nav class="pager" aria-label="Pages">
          <button
            type="button"
            disabled={data.page <= 1}
            onClick={() => go({ page: String(data.page - 1) })}
          >
            Previous page
          </button>
          <span>
            Page {count(data.page)} of {count(data.pages)}
          </span>
          <button
            type="button"
            disabled={data.page >= data.pages}
            onClick={() => go({ page: String(data.page + 1) })}
          >
            Next page
          </button>
        </nav>
      )}
    </>
  );
}
