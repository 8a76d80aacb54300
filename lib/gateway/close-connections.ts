import { ManagementApiDisconnect } from './management-api-disconnect.ts';

/** Calls in flight at once: a group's cascade may close thousands, one HTTP request each. */
const CONCURRENCY = 16;

/**
 * Closes connections through API Gateway's management API (`DELETE @connections/{id}`), so
 * their agents notice at once that their entries are gone. A connection already gone (410)
 * counts as closed; any other failure is counted, not thrown: the entries are deleted anyway,
 * and such an agent notices at its next rotation.
 */
export async function closeConnections(
  connectionIds: readonly string[],
  options: { endpoint: string; region: string },
): Promise<{ closed: number; failed: number }> {
  const result = { closed: 0, failed: 0 };
  if (connectionIds.length === 0) return result;
  const api = new ManagementApiDisconnect(options);
  try {
    const queue = [...connectionIds];
    const lane = async () => {
      for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
        const answer = await api.close(id);
        if (answer === 'closed' || answer === 'gone') result.closed += 1;
        else result.failed += 1;
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, connectionIds.length) }, lane));
  } finally {
    api.destroy();
  }
  return result;
}
