import { connectionPath, managementApiClient } from './management-api-client.ts';

/** Calls in flight at once: a group's cascade may close thousands, one HTTP request each. */
const CONCURRENCY = 16;

export interface CloseOptions {
  /** `https://{api-id}.execute-api.{region}.amazonaws.com/{stage}`, or the local gateway's URL. */
  endpoint: string;
  region: string;
}

/**
 * `DELETE @connections/{id}` (API Gateway's management API) as the functions send it: a signed
 * request without the SDK client (lib/aws/signed-http.ts), with Lambda's credentials, or
 * dummies for a local gateway (plain http). 'closed' (204), 'gone' (410: it was not open any
 * more); anything else, or nothing answering, is thrown. The operator's commands keep the SDK
 * client and its credential chain (management-api-disconnect.ts).
 */
export function connectionCloser(options: CloseOptions): {
  close(connectionId: string): Promise<'closed' | 'gone'>;
  destroy(): void;
} {
  const api = managementApiClient({
    endpoint: options.endpoint,
    region: options.region,
    local: options.endpoint.startsWith('http:'),
    attempts: 3,
    timeoutMs: 5_000,
  });
  return {
    async close(connectionId) {
      const answer = await api.send('DELETE', connectionPath(connectionId));
      if (answer.status === 204 || answer.status === 200) return 'closed';
      if (answer.status === 410) return 'gone';
      throw new Error(
        `DELETE @connections answered ${answer.status}: ${answer.text.slice(0, 200)}`,
      );
    },
    destroy: () => api.destroy(),
  };
}

/**
 * Closes connections through API Gateway's management API, so their agents notice at once
 * that their entries are gone (the rollout function, the local runtime's rollout timer). A
 * connection already gone (410) counts as closed; any other failure is counted, not thrown:
 * the entries are deleted anyway, and such an agent notices at its next rotation.
 */
export async function closeConnections(
  connectionIds: readonly string[],
  options: CloseOptions,
): Promise<{ closed: number; failed: number }> {
  const result = { closed: 0, failed: 0 };
  if (connectionIds.length === 0) return result;
  const api = connectionCloser(options);
  const queue = [...connectionIds];
  const lane = async () => {
    for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
      const closed = await api.close(id).then(
        () => true,
        () => false,
      );
      if (closed) result.closed += 1;
      else result.failed += 1;
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, connectionIds.length) }, lane));
  } finally {
    api.destroy();
  }
  return result;
}
