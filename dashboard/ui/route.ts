import { useEffect, useState } from 'preact/hooks';

/**
 * Where the page is, kept in the URL's fragment so that links, the back button and a bookmark
 * work: `#/` the overview, `#/ns/<namespace>?<filters>` a namespace's entries,
 * `#/ns/<namespace>/we/<name>` one entry, `#/ns/<namespace>/wg/<name>` one WorkloadGroup,
 * `#/ns/<namespace>/wg/<name>/rollout` its rollout.
 */
export type Route =
  | { page: 'overview' }
  | { page: 'entries'; namespace: string; params: URLSearchParams }
  | { page: 'entry'; namespace: string; name: string }
  | { page: 'group'; namespace: string; name: string }
  | { page: 'rollout'; namespace: string; name: string };

export function parseRoute(hash: string): Route {
  const [path = '', query = ''] = hash.replace(/^#/, '').split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'ns' && parts[1]) {
    if (parts[2] === 'we' && parts[3])
      return { page: 'entry', namespace: parts[1], name: parts[3] };
    if (parts[2] === 'wg' && parts[3]) {
      const page = parts[4] === 'rollout' ? 'rollout' : 'group';
      return { page, namespace: parts[1], name: parts[3] };
    }
    return { page: 'entries', namespace: parts[1], params: new URLSearchParams(query) };
  }
  return { page: 'overview' };
}

export function entriesHref(
  namespace: string,
  params?: URLSearchParams | Record<string, string>,
): string {
  const query = new URLSearchParams(params).toString();
  return `#/ns/${encodeURIComponent(namespace)}${query ? `?${query}` : ''}`;
}

export function entryHref(namespace: string, name: string): string {
  return `#/ns/${encodeURIComponent(namespace)}/we/${encodeURIComponent(name)}`;
}

export function groupHref(namespace: string, name: string): string {
  return `#/ns/${encodeURIComponent(namespace)}/wg/${encodeURIComponent(name)}`;
}

export function rolloutHref(namespace: string, name: string): string {
  return `${groupHref(namespace, name)}/rollout`;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.hash));
    window.addEventListener('hashchange', update);
    return () => window.removeEventListener('hashchange', update);
  }, []);
  return route;
}
