import type { SignedHttpClient } from '../aws/signed-http.ts';
import type { ConnectionActivity } from '../domain/heartbeat.ts';
import type { ConnectionLiveness, LivenessAnswer } from '../registration/liveness.ts';
import { connectionPath, managementApiClient } from './management-api-client.ts';

export interface ManagementApiOptions {
  /** `https://{api-id}.execute-api.{region}.amazonaws.com/{stage}`, or the local gateway's URL. */
  endpoint: string | (() => string);
  region: string;
  /** Local gateways need no signature: dummy credentials. Else the function's (Lambda's). */
  local?: boolean;
}

/**
 * The liveness check over API Gateway's management API: `GET @connections/{id}`
 * (GetConnection) answers 200 for a connection that is open and 410 (GoneException) for one
 * that is not. A signed request without the SDK client (lib/aws/signed-http.ts; issue 27: the
 * client was ~25 KB of the `$disconnect` and sweeper bundles); only the deployed functions
 * and the local runtime check liveness, so the credentials are Lambda's or dummies. Throttling
 * and 5xx are tried once more; what still fails is 'unknown', named. An open connection's
 * answer carries its activity (`lastActiveAt`, `connectedAt`, and the answer's `Date`, all in
 * API Gateway's clock), which the sweeper compares with the heartbeat's bound.
 */
export class ManagementApiLiveness implements ConnectionLiveness {
  readonly #http: SignedHttpClient;

  constructor(options: ManagementApiOptions) {
    const { endpoint, region, local } = options;
    this.#http = managementApiClient({
      // Read at each check: the local runtime knows its gateway's port only once it listens.
      endpoint,
      region,
      local: local ?? false,
      // A check must end well inside the sweeper's deadline margin (5 s), retries included:
      // an unanswered one is unknown, and the next interval asks again.
      attempts: 2,
      timeoutMs: 1_500,
    });
  }

  async check(connectionId: string): Promise<LivenessAnswer> {
    try {
      const answer = await this.#http.send('GET', connectionPath(connectionId));
      if (answer.status === 200) return { alive: activityOf(answer) };
      if (answer.status === 410) return 'gone';
      // AccessDenied, throttling past the retries: named, so the sweeper's log and metric say
      // why checks are not landing.
      return { unknown: describeRefusal(answer) };
    } catch (error) {
      const name = error instanceof Error ? error.name : 'Error';
      const message = error instanceof Error ? error.message : String(error);
      return { unknown: `${name}: ${message}` };
    }
  }
}

/**
 * GetConnection's body as AWS sends it (`{"connectedAt","identity","lastActiveAt"}`, ISO 8601;
 * the SDK reads these JSON names) and the answer's `Date` header. PascalCase names are read
 * too (the local gateway's). A field that is missing or not a time is left out: without
 * `lastActiveAt` nothing is known about silence, and nothing is closed.
 */
export function activityOf(answer: {
  text: string;
  headers: Record<string, string | string[] | undefined>;
}): ConnectionActivity {
  const activity: ConnectionActivity = {};
  let body: Record<string, unknown> = {};
  try {
    const json = JSON.parse(answer.text) as unknown;
    if (json && typeof json === 'object') body = json as Record<string, unknown>;
  } catch {
    // Not JSON: nothing known but that it is open.
  }
  const lastActiveAt = timeOf(body.lastActiveAt ?? body.LastActiveAt);
  const connectedAt = timeOf(body.connectedAt ?? body.ConnectedAt);
  const header = answer.headers.date;
  const answeredAt = timeOf(Array.isArray(header) ? header[0] : header);
  if (lastActiveAt !== undefined) activity.lastActiveAt = lastActiveAt;
  if (connectedAt !== undefined) activity.connectedAt = connectedAt;
  if (answeredAt !== undefined) activity.answeredAt = answeredAt;
  return activity;
}

function timeOf(value: unknown): number | undefined {
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const at = typeof value === 'number' ? value * 1000 : Date.parse(value);
  return Number.isFinite(at) ? at : undefined;
}

/** `ForbiddenException: Forbidden`, from API Gateway's error header and body. */
function describeRefusal(answer: {
  status: number;
  text: string;
  headers: Record<string, string | string[] | undefined>;
}): string {
  const header = answer.headers['x-amzn-errortype'];
  const type = (Array.isArray(header) ? header[0] : header)?.split(':')[0];
  let message = answer.text.slice(0, 200);
  try {
    const json = JSON.parse(answer.text) as { message?: unknown; Message?: unknown };
    message = String(json.message ?? json.Message ?? message);
  } catch {
    // Not JSON: the text as it came.
  }
  return `${type || `HTTP ${answer.status}`}: ${message}`;
}
