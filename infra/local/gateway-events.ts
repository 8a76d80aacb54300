import { randomBytes, randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import type { IamIdentity } from './sigv4-verifier.ts';

/**
 * The events API Gateway (WebSocket API, Lambda proxy integration) hands to Lambda, built
 * from what the local gateway saw. Shapes follow the samples in the API Gateway developer
 * guide: headers and query strings only on $connect (and the authorizer), a body only on
 * messages, the authorizer's context on every event of the connection.
 */

export type EventType = 'CONNECT' | 'MESSAGE' | 'DISCONNECT';

/** The authorizer's context as API Gateway passes it on: values stringified, plus principalId. */
export interface AuthorizerContext {
  principalId: string;
  integrationLatency: number;
  [key: string]: string | number;
}

export interface WebSocketRequestContext {
  routeKey: string;
  eventType: EventType;
  /** Set on MESSAGE events only; API Gateway sends null on $connect and $disconnect. */
  messageId: string | null;
  extendedRequestId: string;
  requestTime: string;
  messageDirection: 'IN';
  stage: string;
  connectedAt: number;
  requestTimeEpoch: number;
  requestId: string;
  domainName: string;
  connectionId: string;
  apiId: string;
  /** The caller; on an IAM-authorized $connect also who signed it (userArn, caller, ...). */
  identity: { sourceIp: string; userAgent?: string } & Partial<IamIdentity>;
  authorizer?: AuthorizerContext;
  disconnectStatusCode?: number | null;
  disconnectReason?: string | null;
}

export interface WebSocketEvent {
  requestContext: WebSocketRequestContext;
  headers?: Record<string, string>;
  multiValueHeaders?: Record<string, string[]>;
  queryStringParameters?: Record<string, string>;
  multiValueQueryStringParameters?: Record<string, string[]>;
  body?: string;
  isBase64Encoded: boolean;
}

export interface AuthorizerEvent {
  type: 'REQUEST';
  methodArn: string;
  headers: Record<string, string>;
  multiValueHeaders: Record<string, string[]>;
  queryStringParameters: Record<string, string>;
  multiValueQueryStringParameters: Record<string, string[]>;
  stageVariables: Record<string, string>;
  requestContext: Omit<WebSocketRequestContext, 'authorizer'>;
}

/** What the gateway knows about the HTTP upgrade request, collected once. */
export interface UpgradeRequest {
  method: string;
  /** The path as it arrived, still percent-encoded (a SigV4 signature covers it). */
  path: string;
  headers: Record<string, string>;
  multiValueHeaders: Record<string, string[]>;
  query: Record<string, string>;
  multiValueQuery: Record<string, string[]>;
  sourceIp: string;
  userAgent: string | undefined;
  domainName: string;
}

export interface ApiIdentity {
  apiId: string;
  stage: string;
  region: string;
}

/**
 * An id shaped like API Gateway's (`L0SM9cOFvHcCIhw=`): 11 random bytes in base64, with
 * `+` and `/` swapped for URL-safe characters so ids can sit in `/@connections/{id}` paths.
 */
export function gatewayId(): string {
  return randomBytes(11).toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** API Gateway's `requestTime`: Common Log Format in UTC, `13/Dec/2020:10:17:47 +0000`. */
export function requestTime(epochMs: number): string {
  const d = new Date(epochMs);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} +0000`;
}

/** `arn:aws:execute-api:<region>:<account>:<api>/<stage>/$connect`, the authorizer's methodArn. */
export function connectMethodArn(api: ApiIdentity): string {
  return `arn:aws:execute-api:${api.region}:000000000000:${api.apiId}/${api.stage}/$connect`;
}

interface ContextInput {
  api: ApiIdentity;
  routeKey: string;
  eventType: EventType;
  connectionId: string;
  connectedAt: number;
  at: number;
  request: Pick<UpgradeRequest, 'sourceIp' | 'userAgent' | 'domainName'>;
  /** API Gateway repeats the authorizer's output on every event of the connection. */
  authorizer?: AuthorizerContext | undefined;
  /** The SigV4-verified caller of an IAM-authorized $connect. */
  iamIdentity?: IamIdentity | undefined;
}

export function requestContext(input: ContextInput): WebSocketRequestContext {
  const requestId = gatewayId();
  const identity: WebSocketRequestContext['identity'] = {
    ...input.iamIdentity,
    sourceIp: input.request.sourceIp,
  };
  if (input.request.userAgent !== undefined) identity.userAgent = input.request.userAgent;
  const context: WebSocketRequestContext = {
    routeKey: input.routeKey,
    eventType: input.eventType,
    messageId: input.eventType === 'MESSAGE' ? gatewayId() : null,
    extendedRequestId: requestId,
    requestTime: requestTime(input.at),
    messageDirection: 'IN',
    stage: input.api.stage,
    connectedAt: input.connectedAt,
    requestTimeEpoch: input.at,
    requestId,
    domainName: input.request.domainName,
    connectionId: input.connectionId,
    apiId: input.api.apiId,
    identity,
  };
  if (input.authorizer) context.authorizer = input.authorizer;
  return context;
}

export function authorizerEvent(
  api: ApiIdentity,
  request: UpgradeRequest,
  context: WebSocketRequestContext,
): AuthorizerEvent {
  return {
    type: 'REQUEST',
    methodArn: connectMethodArn(api),
    headers: request.headers,
    multiValueHeaders: request.multiValueHeaders,
    queryStringParameters: request.query,
    multiValueQueryStringParameters: request.multiValueQuery,
    stageVariables: {},
    requestContext: context,
  };
}

/** Hop-by-hop headers API Gateway consumes itself; the $connect integration never sees them. */
const HANDSHAKE_ONLY = new Set(['connection', 'upgrade']);

export function connectEvent(
  request: UpgradeRequest,
  context: WebSocketRequestContext,
): WebSocketEvent {
  const keep = (name: string) => !HANDSHAKE_ONLY.has(name.toLowerCase());
  const event: WebSocketEvent = {
    requestContext: context,
    headers: Object.fromEntries(Object.entries(request.headers).filter(([name]) => keep(name))),
    multiValueHeaders: Object.fromEntries(
      Object.entries(request.multiValueHeaders).filter(([name]) => keep(name)),
    ),
    isBase64Encoded: false,
  };
  // API Gateway leaves the query fields out when the URL has no query string.
  if (Object.keys(request.query).length > 0) {
    event.queryStringParameters = request.query;
    event.multiValueQueryStringParameters = request.multiValueQuery;
  }
  return event;
}

export function messageEvent(
  context: WebSocketRequestContext,
  body: string,
  isBase64Encoded: boolean,
): WebSocketEvent {
  return { requestContext: context, body, isBase64Encoded };
}

/** $disconnect carries only the few headers API Gateway synthesises, not the client's. */
export function disconnectEvent(context: WebSocketRequestContext): WebSocketEvent {
  const headers: Record<string, string> = {
    Host: context.domainName,
    'x-api-key': '',
    'X-Forwarded-For': '',
    'x-restapi': '',
  };
  return {
    requestContext: context,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    isBase64Encoded: false,
  };
}

/**
 * A Lambda context for one invocation. Powertools' Logger reads functionName, awsRequestId,
 * memoryLimitInMB and invokedFunctionArn from it, so each must be present and plausible.
 */
export function lambdaContext(functionName: string, region: string, timeoutMs: number): Context {
  const awsRequestId = randomUUID();
  const deadline = Date.now() + timeoutMs;
  const day = new Date().toISOString().slice(0, 10).replace(/-/g, '/');
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:000000000000:function:${functionName}`,
    memoryLimitInMB: '256',
    awsRequestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `${day}/[$LATEST]${awsRequestId.replace(/-/g, '')}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}
