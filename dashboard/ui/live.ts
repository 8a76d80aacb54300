import { useEffect, useRef, useState } from 'preact/hooks';

/**
 * A view's data, kept live: fetched once, then again whenever the server's event stream for
 * this view says it changed. A failed read shows as `problem` next to the last good data, so
 * old numbers are never shown as if they were current.
 */
export interface Live<T> {
  data: T | undefined;
  /** The request itself was refused (400, 404): the view cannot be shown. */
  error: string | undefined;
  /** Reading the registry failed, or the server is gone; the data shown may be old. */
  problem: string | undefined;
  /** When the data shown was fetched. */
  fetchedAt: number | undefined;
}

export async function getJson<T>(
  url: string,
): Promise<{ ok: true; body: T } | { ok: false; status: number; error: string }> {
  const response = await fetch(url, { headers: { accept: 'application/json' } });
  const body = (await response.json().catch(() => ({}))) as T & { error?: string };
  if (response.ok) return { ok: true, body };
  return { ok: false, status: response.status, error: body.error ?? `HTTP ${response.status}` };
}

export function useLive<T>(url: string, events: string): Live<T> {
  const [state, setState] = useState<Live<T>>({
    data: undefined,
    error: undefined,
    problem: undefined,
    fetchedAt: undefined,
  });
  const current = useRef(url);
  current.current = url;

  useEffect(() => {
    let active = true;
    // Only the newest fetch may set the state: an older one answering late must not win.
    let generation = 0;
    const load = async () => {
      const mine = ++generation;
      try {
        const answer = await getJson<T>(url);
        if (!active || mine !== generation) return;
        if (answer.ok) {
          setState({
            data: answer.body,
            error: undefined,
            problem: undefined,
            fetchedAt: Date.now(),
          });
        } else if (answer.status >= 500) {
          setState((old) => ({ ...old, problem: answer.error }));
        } else {
          setState({
            data: undefined,
            error: answer.error,
            problem: undefined,
            fetchedAt: undefined,
          });
        }
      } catch {
        if (active && mine === generation) {
          setState((old) => ({
            ...old,
            problem: 'the dashboard server does not answer (was it stopped?)',
          }));
        }
      }
    };
    setState((old) => ({ ...old, error: undefined }));
    void load();
    const stream = new EventSource(events);
    stream.addEventListener('change', () => void load());
    stream.addEventListener('problem', (event) => {
      const { error } = JSON.parse((event as MessageEvent<string>).data) as { error: string };
      setState((old) => ({ ...old, problem: `cannot read the registry: ${error}` }));
    });
    stream.addEventListener('error', () => {
      if (stream.readyState !== EventSource.OPEN) {
        setState((old) => ({
          ...old,
          problem: 'lost the connection to the dashboard server; retrying',
        }));
      }
    });
    return () => {
      active = false;
      stream.close();
    };
  }, [url, events]);
  return state;
}
