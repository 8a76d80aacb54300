/**
 * The parts of API Gateway WebSocket events the handlers read. `@types/aws-lambda` leaves out
 * headers, the authorizer context and the caller identity of WebSocket events, so the shapes
 * are written down here; the local gateway builds events of exactly this shape.
 */

export type QueryParameters = Record<string, string | undefined>;
export type MultiValueQueryParameters = Record<string, string[] | undefined>;
export type Headers = Record<string, string | undefined>;
export type MultiValueHeaders = Record<string, string[] | undefined>;

/** What the REQUEST authorizer puts into `requestContext.authorizer` (strings only). */
export interface AuthorizerContext {
  principalId?: string;
  principal?: string;
  namespace?: string;
  serviceAccount?: string;
  tokenId?: string;
  [key: string]: unknown;
}

export interface WebSocketRequestContext {
  routeKey: string;
  eventType?: 'CONNECT' | 'MESSAGE' | 'DISCONNECT';
  connectionId: string;
  /** When API Gateway accepted the connection (epoch ms): the server time of a connect. */
  connectedAt?: number;
  /** When API Gateway received this event (epoch ms). */
  requestTimeEpoch?: number;
  requestId?: string;
  domainName?: string;
  stage?: string;
  apiId?: string;
  /** Present on `$connect` behind an authorizer. */
  authorizer?: AuthorizerContext | null;
  /** On `$disconnect`: the close frame's code and reason, as the client (or the gateway) sent them. */
  disconnectStatusCode?: number | null;
  disconnectReason?: string | null;
  /** The caller as API Gateway saw it; `userArn` is set for SigV4 (IAM) callers. */
  identity?: { sourceIp?: string; userArn?: string | null; userAgent?: string | null };
}

export interface WebSocketConnectEvent {
  requestContext: WebSocketRequestContext;
  headers?: Headers | null;
  multiValueHeaders?: MultiValueHeaders | null;
  queryStringParameters?: QueryParameters | null;
  multiValueQueryStringParameters?: MultiValueQueryParameters | null;
  isBase64Encoded?: boolean;
}

export interface WebSocketDisconnectEvent {
  requestContext: WebSocketRequestContext;
  headers?: Headers | null;
}

export interface WebSocketMessageEvent {
  requestContext: WebSocketRequestContext;
  body?: string | null;
  isBase64Encoded?: boolean;
}

/** The REQUEST authorizer event of a WebSocket `$connect`. */
export interface WebSocketAuthorizerEvent {
  type: 'REQUEST';
  methodArn: string;
  headers?: Headers | null;
  multiValueHeaders?: MultiValueHeaders | null;
  queryStringParameters?: QueryParameters | null;
  multiValueQueryStringParameters?: MultiValueQueryParameters | null;
  requestContext: WebSocketRequestContext;
}

/** The authorizer's answer: an IAM policy for `methodArn` and a flat context. */
export interface AuthorizerResult {
  principalId: string;
  policyDocument: {
    Version: '2012-10-17';
    Statement: { Action: 'execute-api:Invoke'; Effect: 'Allow' | 'Deny'; Resource: string }[];
  };
  /** API Gateway accepts only string, number and boolean values here. */
  context?: Record<string, string | number | boolean>;
}

/** What `$connect`, `$disconnect` and message routes return to API Gateway. */
export interface WebSocketResult {
  statusCode: number;
  body?: string;
}
