import { connectionPath, managementApiClient } from './management-api-client.ts';

/** 'sent': API Gateway took the message for the client; 'gone': the connection is closed (410). */
export type NoticeAnswer = 'sent' | 'gone' | { failed: string };

/**
 * `POST @connections/{id}` (API Gateway's management API) as the sweeper sends it: a signed
 * request without the SDK client (lib/aws/signed-http.ts; issue 27: the client was ~25 KB of
 * a bundle), with Lambda's credentials, or dummies for a local gateway. How the registrar
 * tells a live agent something it did not ask (its group's changed heartbeat). A notice that
 * does not land is not thrown: the next pass tells it again.
 */
export function connectionNotifier(options: { endpoint: string; region: string }): {
  post(connectionId: string, message: unknown): Promise<NoticeAnswer>;
  destroy(): void;
} {
  const api = managementApiClient({
    endpoint: options.endpoint,
    region: options.region,
    local: options.endpoint.startsWith('http:'),
    // Within a pass's check: one retry of a throttled post, a short wait.
    attempts: 2,
    timeoutMs: 1_500,
  });
  return {
    async post(connectionId, message) {
      try {
        const answer = await api.send(
          'POST',
          connectionPath(connectionId),
          { 'content-type': 'application/json' },
          JSON.stringify(message),
        );
        if (answer.status === 200 || answer.status === 204) return 'sent';
        if (answer.status === 410) return 'gone';
        return {
          failed: `POST @connections answered ${answer.status}: ${answer.text.slice(0, 200)}`,
        };
      } catch (error) {
        return { failed: error instanceof Error ? error.message : String(error) };
      }
    },
    destroy: () => api.destroy(),
  };
}
