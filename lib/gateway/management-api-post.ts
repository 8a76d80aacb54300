import {
  type ApiGatewayManagementApiClient,
  GoneException,
  PostToConnectionCommand,
} from '@aws-sdk/client-apigatewaymanagementapi';
import { type DisconnectOptions, operatorManagementClient } from './management-api-disconnect.ts';

/** 'sent': API Gateway took the message for the client; 'gone': the connection is closed (410). */
export type PostAnswer = 'sent' | 'gone' | { failed: string };

/**
 * Sends a message to a connection through API Gateway's management API (`POST
 * @connections/{id}`): how the registrar tells an agent something it did not ask (a cordon).
 * On AWS the caller signs with its own credentials and needs `execute-api:ManageConnections`,
 * as for the DELETE that `registrar delete` uses.
 */
export class ManagementApiPost {
  readonly #client: ApiGatewayManagementApiClient;

  constructor(options: DisconnectOptions) {
    this.#client = operatorManagementClient(options);
  }

  async post(connectionId: string, message: unknown): Promise<PostAnswer> {
    try {
      await this.#client.send(
        new PostToConnectionCommand({
          ConnectionId: connectionId,
          Data: new TextEncoder().encode(JSON.stringify(message)),
        }),
      );
      return 'sent';
    } catch (error) {
      if (error instanceof GoneException) return 'gone';
      const name = error instanceof Error ? error.name : 'Error';
      const text = error instanceof Error ? error.message : String(error);
      return { failed: `${name}: ${text}` };
    }
  }

  destroy(): void {
    this.#client.destroy();
  }
}
