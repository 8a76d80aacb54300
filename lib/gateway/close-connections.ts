import { SignedHttpClient } from '../aws/signed-http.ts';
import { credentialsFromEnvironment } from '../lambda-credentials.ts';
import { connectionPath } from './management-api-liveness.ts';

/** Calls in flight at once: a group's cascade may close thousands, one HTTP request each. */
const CONCURRENCY = 16;

/**
 * Closes connections through API Gateway's management API (`DELETE @connections/{id}`), so
 * their agents notice at once that their entries are gone. A connection already gone (410)
 * counts as closed; any other failure is counted, not thrown: the entries are deleted anyway,
 * and such an agent notices at its next rotation. For the rollout function and the local
 * runtime's rollout timer: a signed request without the SDK client (lib/aws/signed-http.ts),
 * with Lambda's credentials, or dummies for a local gateway (plain http). The operator's
 * commands keep the SDK client and its credential chain (management-api-disconnect.ts).
 */
export async function closeConnections(
  connectionIds: readonly string[],
  options: { endpoint: string; region: string },
): Promise<{ closed: number; failed: number }> {
  const result = { closed: 0, failed: 0 };
  if (connectionIds.length === 0) return result;
  const local = options.endpoint.startsWith('http:');
  const api = new SignedHttpClient({
    endpoint: options.endpoint,
    region: options.region,
    service: 'execute-api',
    credentials: async () =>
      local ? { accessKeyId: 'local', secretAccessKey: 'local' } : credentialsFromEnvironment(),
    attempts: 3,
    timeoutMs: 5_000,
    retryable: (answer) => answer.status === 429,
  });
  const queue = [...connectionIds];
  const lane = async () => {
    for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
      const status = await api.send('DELETE', connectionPath(id)).then(
        (answer) => answer.status,
        () => 0,
      );
      // 204: closed; 410: it was not open any more. Both leave no agent holding a gone entry.
      if (status === 204 || status === 200 || status === 410) result.closed += 1;
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
