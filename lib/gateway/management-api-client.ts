import { SignedHttpClient } from '../aws/signed-http.ts';
import { credentialsFromEnvironment } from '../lambda-credentials.ts';

/**
 * API Gateway's management API (`@connections`) as the functions call it: signed requests
 * without the SDK client (lib/aws/signed-http.ts) with Lambda's credentials, or dummies for a
 * local gateway, which checks no signature. Throttling (429) is tried again, as are 5xx and
 * network errors. Each caller sets how long it may wait.
 */
export function managementApiClient(options: {
  /** `https://{api-id}.execute-api.{region}.amazonaws.com/{stage}`, or the local gateway's URL. */
  endpoint: string | (() => string);
  region: string;
  local: boolean;
  attempts: number;
  timeoutMs: number;
}): SignedHttpClient {
  const { endpoint, region, local, attempts, timeoutMs } = options;
  return new SignedHttpClient({
    endpoint,
    region,
    service: 'execute-api',
    credentials: async () =>
      local ? { accessKeyId: 'local', secretAccessKey: 'local' } : credentialsFromEnvironment(),
    attempts,
    timeoutMs,
    retryable: (answer) => answer.status === 429,
  });
}

/** The management API's path of one connection. */
export function connectionPath(connectionId: string): string {
  return `/@connections/${encodeURIComponent(connectionId)}`;
}
