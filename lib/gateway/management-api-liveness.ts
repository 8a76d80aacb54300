import {
  ApiGatewayManagementApiClient,
  GetConnectionCommand,
  GoneException,
} from '@aws-sdk/client-apigatewaymanagementapi';
import type { ConnectionLiveness } from '../registration/liveness.ts';

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

  async check(connectionId: string): Promise<'alive' | 'gone' | 'unknown'> {
    try {
      await this.#connect().send(new GetConnectionCommand({ ConnectionId: connectionId }));
      return 'alive';
    } catch (error) {
      return error instanceof GoneException ? 'gone' : 'unknown';
    }
  }

  /** Built on first use: the local runtime knows its gateway's port only once it listens. */
  #connect(): ApiGatewayManagementApiClient {
    const { endpoint, region, local } = this.#options;
    this.#client ??= new ApiGatewayManagementApiClient({
      region,
      endpoint: typeof endpoint === 'string' ? endpoint : endpoint(),
      ...(local ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
    });
    return this.#client;
  }
}
