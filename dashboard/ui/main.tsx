import { render } from 'preact';
import { useEffect } from 'preact/hooks';
import { Entries } from './entries.tsx';
import { Entry } from './entry.tsx';
import { Group, Rollout } from './group.tsx';
import { Overview } from './overview.tsx';
import { useRoute } from './route.ts';
import './style.css';

function App() {
  const route = useRoute();
  useEffect(() => {
    document.title =
      route.page === 'overview'
        ? 'Overview · registrar dashboard'
        : route.page === 'entries'
          ? `${route.namespace} · registrar dashboard`
          : route.page === 'rollout'
            ? `rollout of ${route.name} · ${route.namespace} · registrar dashboard`
            : `${route.name} · ${route.namespace} · registrar dashboard`;
    // A new page: its heading gets the focus, so a screen reader announces where the reader is.
    document.querySelector<HTMLElement>('#main h1')?.focus();
  }, [route]);
  return (
    <>
      <button
        type="button"
        class="skip"
        onClick={() => document.querySelector<HTMLElement>('#main h1')?.focus()}
      >
        Skip to content
      </button>
      <header class="top">
        <a href="#/" class="brand">
          registrar dashboard
        </a>
        <span class="readonly">read-only</span>
      </header>
      {route.page === 'overview' && <Overview />}
      {route.page === 'entries' && <Entries namespace={route.namespace} params={route.params} />}
      {route.page === 'entry' && <Entry namespace={route.namespace} name={route.name} />}
      {route.page === 'group' && <Group namespace={route.namespace} name={route.name} />}
      {route.page === 'rollout' && <Rollout namespace={route.namespace} name={route.name} />}
    </>
  );
}

const root = document.getElementById('app');
if (root) render(<App />, root);
