import {
  ApiGatewayManagementApiClient,
  DeleteConnectionCommand,
  GoneException,
} from '@aws-sdk/client-apigatewaymanagementapi';

/** 'closed': API Gateway closed it (204); 'gone': it was not open any more (410). */
export type DisconnectAnswer = 'closed' | 'gone' | { failed: string };

export interface DisconnectOptions {
  /** `https://{api-id}.execute-api.{region}.amazonaws.com/{stage}`, or the local gateway's URL. */
  endpoint: string;
  region: string;
}

/**
 * Closes connections through API Gateway's management API (`DELETE @connections/{id}`): the
 * client gets a close frame (1000) and `$disconnect` runs, as for any close. Used after an
 * operator deleted an entry, so its agent notices at once and reconnects, instead of holding
 * a connection the registrar no longer counts until its next rotation (up to 2 h). On AWS the
 * caller signs with its own credentials and needs `execute-api:ManageConnections`.
 */
export class ManagementApiDisconnect {
  readonly #client: ApiGatewayManagementApiClient;

  constructor(options: DisconnectOptions) {
    this.#client = operatorManagementClient(options);
  }

  async close(connectionId: string): Promise<DisconnectAnswer> {
    try {
      await this.#client.send(new DeleteConnectionCommand({ ConnectionId: connectionId }));
      return 'closed';
    } catch (error) {
      if (error instanceof GoneException) return 'gone';
      const name = error instanceof Error ? error.name : 'Error';
      const message = error instanceof Error ? error.message : String(error);
      return { failed: `${name}: ${message}` };
    }
  }

  destroy(): void {
    this.#client.destroy();
  }
}

/** The management API client of an operator's command (`delete`, `cordon`). */
export function operatorManagementClient({
  endpoint,
  region,
}: DisconnectOptions): ApiGatewayManagementApiClient {
  return new ApiGatewayManagementApiClient({
    region,
    endpoint,
    // An operator waits for the command: a few seconds, retries included, then it says so.
    requestHandler: { connectionTimeout: 2_000, requestTimeout: 5_000 },
    maxAttempts: 3,
    // The local gateway (plain http) checks no signature; dummies keep the SDK from
    // looking for credentials an operator's laptop may not have.
    ...(endpoint.startsWith('http:')
      ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
      : {}),
  });
}
