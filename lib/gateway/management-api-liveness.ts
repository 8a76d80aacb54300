import {
  ApiGatewayManagementApiClient,
  GetConnectionCommand,
  GoneException,
} from '@aws-sdk/client-apigatewaymanagementapi';
import type { ConnectionLiveness, LivenessAnswer } from '../registration/liveness.ts';

export interface ManagementApiOptions {
  /** `https://{api-id}.execute-api.{region}.amazonaws.com/{stage}`, or the local gateway's URL. */
  endpoint: string | (() => string);
  region: string;
  /** Local gateways need no signature; dummies keep the SDK from looking for credentials. */
  local?: boolean;
}

/**
 * The liveness check over API Gateway's management API: `GetConnection` answers 200 for a
 * connection that is open and GoneException (410) for one that is not. The SDK retries
 * throttling and 5xx itself; what still fails is 'unknown'.
 */
export class ManagementApiLiveness implements ConnectionLiveness {
  readonly #options: ManagementApiOptions;
  #client: ApiGatewayManagementApiClient | undefined;

  constructor(options: ManagementApiOptions) {
    this.#options = options;
  }

  async check(connectionId: string): Promise<LivenessAnswer> {
    try {
      await this.#connect().send(new GetConnectionCommand({ ConnectionId: connectionId }));
      return 'alive';
    } catch (error) {
      if (error instanceof GoneException) return 'gone';
      // AccessDenied, throttling past the retries, a timeout: named, so the sweeper's log and
      // metric say why checks are not landing.
      const name = error instanceof Error ? error.name : 'Error';
      const message = error instanceof Error ? error.message : String(error);
      return { unknown: `${name}: ${message}` };
    }
  }

  /** Built on first use: the local runtime knows its gateway's port only once it listens. */
  #connect(): ApiGatewayManagementApiClient {
    const { endpoint, region, local } = this.#options;
    this.#client ??= new ApiGatewayManagementApiClient({
      region,
      endpoint: typeof endpoint === 'string' ? endpoint : endpoint(),
      // A check must end well inside the sweeper's deadline margin (5 s), retries included:
      // an unanswered one is unknown, and the next interval asks again.
      requestHandler: { connectionTimeout: 1_000, requestTimeout: 1_500 },
      maxAttempts: 2,
      ...(local ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
    });
    return this.#client;
  }
}
