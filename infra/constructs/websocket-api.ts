import { type CfnElement, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  CfnIntegrationResponse,
  type IWebSocketRouteAuthorizer,
  LogGroupLogDestination,
  WebSocketApi,
  type WebSocketIntegration,
  WebSocketStage,
} from 'aws-cdk-lib/aws-apigatewayv2';
import {
  WebSocketIamAuthorizer,
  WebSocketLambdaAuthorizer,
} from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import {
  WebSocketLambdaIntegration,
  WebSocketMockIntegration,
} from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct, type IConstruct } from 'constructs';
import { ACCOUNT_LIMITS, routeThrottle } from '../route-throttle.ts';
import type { StackOptions } from '../stack-options.ts';

export interface WebSocketApiProps {
  options: StackOptions;
  connect: IFunction;
  disconnect: IFunction;
  message: IFunction;
  /** Required in token mode. */
  authorize: IFunction | undefined;
}

/**
 * Agent protocol v1: message routes answered by the message function (replies expected).
 * `heartbeat`: an agent acknowledges its group's changed heartbeat (issue 44).
 */
export const MESSAGE_ROUTES = ['health', 'describe', 'drain', 'heartbeat', '$default'] as const;

/** The stage's throttle, sized in infra/route-throttle.ts (the local gateway applies it too). */
export { ACCOUNT_LIMITS, routeThrottle };

/**
 * The agents' WebSocket API: route by `$request.body.action`, `$connect` behind the token
 * authorizer (or IAM), message replies as route responses, and `ping` answered by API Gateway
 * itself so keep-alives cost no Lambda invocation.
 */
export class RegistrarWebSocketApi extends Construct {
  readonly api: WebSocketApi;
  readonly stage: WebSocketStage;
  /** The access log group, when `accessLogs` is on. */
  readonly accessLogs: LogGroup | undefined;

  constructor(scope: Construct, id: string, props: WebSocketApiProps) {
    super(scope, id);
    this.api = new WebSocketApi(this, 'Api', {
      apiName: `${Stack.of(this).stackName}-agents`,
      description: 'workload-registrar: EC2 agents register their WorkloadEntry here',
      routeSelectionExpression: '$request.body.action',
      connectRouteOptions: {
        integration: new WebSocketLambdaIntegration('Connect', props.connect),
        authorizer: connectAuthorizer(props),
      },
      disconnectRouteOptions: {
        integration: new WebSocketLambdaIntegration('Disconnect', props.disconnect),
      },
    });
    const messages = new WebSocketLambdaIntegration('Message', props.message);
    for (const routeKey of MESSAGE_ROUTES) {
      // returnResponse: the function's `body` becomes the reply the agent receives.
      const route = this.api.addRoute(routeKey, { integration: messages, returnResponse: true });
      acknowledgeConnectionScopedAuth(route);
    }
    acknowledgeConnectionScopedAuth(this.api.node.findChild('$disconnect-Route'));
    acknowledgeConnectionScopedAuth(this.addPingRoute());

    // Access logs need API Gateway's account-wide logs role: a stage that asks for them in an
    // account without one fails to deploy. Off unless the operator says the role is there (or
    // lets the stack set it); every function logs each event it handles either way.
    this.accessLogs = props.options.accessLogs
      ? new LogGroup(this, 'AccessLogs', {
          retention: RetentionDays.THREE_MONTHS,
          removalPolicy: RemovalPolicy.DESTROY,
        })
      : undefined;
    this.stage = new WebSocketStage(this, 'Stage', {
      webSocketApi: this.api,
      stageName: props.options.stageName,
      autoDeploy: true,
      throttle: routeThrottle(props.options.fleetSize),
      // Per-route metrics: the connect-error alarm watches the $connect route alone.
      detailedMetricsEnabled: true,
      ...(this.accessLogs && {
        accessLogSettings: {
          destination: new LogGroupLogDestination(this.accessLogs),
          format: ACCESS_LOG_FORMAT,
        },
      }),
    });
    if (!this.accessLogs) {
      Validations.of(this.stage).acknowledge({
        id: 'AwsSolutions-APIG1',
        reason:
          "Access logs need API Gateway's account-wide CloudWatch Logs role, which this stack does not set unless asked (-c apiGatewayLogsRole=true) because it replaces the role of every other API in the region; -c accessLogs=true turns them on where the account has one. The connect, disconnect and message functions log every event they handle.",
      });
    }
  }

  /**
   * The management endpoint (`https://{api}.execute-api.{region}.amazonaws.com/{stage}`) where
   * `GET @connections/{id}` tells whether a connection still exists.
   */
  get connectionsUrl(): string {
    return this.stage.callbackUrl;
  }

  /**
   * Lets a function ask whether a connection still exists (`GET @connections/{id}`), and
   * nothing else: not POST (send to an agent) nor DELETE (close its connection), which
   * `WebSocketStage.grantManagementApiAccess` would also allow.
   */
  grantConnectionLookups(grantee: IGrantable): void {
    this.#grantConnections(
      grantee,
      'GET',
      'Connection ids are chosen by API Gateway at connect time; the grant names this API, this stage and the GET method (a liveness lookup), never POST or DELETE.',
    );
  }

  /**
   * Lets a function close connections (`DELETE @connections/{id}`), and nothing else: the
   * rollout function closes those of the entries a group deleted in the cluster took along,
   * so their agents notice at once (as `registrar delete wg` does); the message and mesh
   * functions close a connection over its message budget.
   */
  grantConnectionClosing(grantee: IGrantable): void {
    this.#grantConnections(
      grantee,
      'DELETE',
      'Connection ids are chosen by API Gateway at connect time; the grant names this API, this stage and the DELETE method (closing the connections of removed entries, or of a connection over its message budget), never POST.',
    );
  }

  /**
   * Lets a function send to connections (`POST @connections/{id}`), and nothing else: the
   * sweeper tells a live agent its group's changed heartbeat (issue 44), and the agent
   * acknowledges it on its own connection.
   */
  grantConnectionNotices(grantee: IGrantable): void {
    this.#grantConnections(
      grantee,
      'POST',
      "Connection ids are chosen by API Gateway at connect time; the grant names this API, this stage and the POST method (telling a live agent its group's changed heartbeat), never DELETE.",
    );
  }

  #grantConnections(grantee: IGrantable, method: 'GET' | 'DELETE' | 'POST', reason: string): void {
    const stack = Stack.of(this);
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['execute-api:ManageConnections'],
        resources: [
          stack.formatArn({
            service: 'execute-api',
            resource: this.api.apiId,
            resourceName: `${this.stage.stageName}/${method}/@connections/*`,
          }),
        ],
      }),
    );
    // cdk-nag names the finding by the ARN as it renders it: pseudo parameters and references
    // in angle brackets, literals (an environment-bound stack) as they are.
    const shown = (value: string, pseudo: string) =>
      Token.isUnresolved(value) ? `<${pseudo}>` : value;
    const api = stack.getLogicalId(this.api.node.defaultChild as CfnElement);
    const arn = `arn:${shown(stack.partition, 'AWS::Partition')}:execute-api:${shown(stack.region, 'AWS::Region')}:${shown(stack.account, 'AWS::AccountId')}:<${api}>/${this.stage.stageName}/${method}/@connections/*`;
    if (Construct.isConstruct(grantee.grantPrincipal)) {
      Validations.of(grantee.grantPrincipal).acknowledge({
        id: `AwsSolutions-IAM5[Resource::${arn}]`,
        reason,
      });
    }
  }

  /**
   * `ping` -> `{"action":"pong"}` from a MOCK integration: the request template sets the
   * status, the integration response supplies the body, the route response sends it back.
   */
  private addPingRoute(): IConstruct {
    const route = this.api.addRoute('ping', {
      integration: new WebSocketMockIntegration('Pong', {
        requestTemplates: { $default: JSON.stringify({ statusCode: 200 }) },
        templateSelectionExpression: '\\$default',
      }),
      returnResponse: true,
    });
    // The L2 mock integration creates the integration under the route, with the id given
    // above, but has no option for its response.
    const integration = route.node.findChild('Pong') as WebSocketIntegration;
    new CfnIntegrationResponse(this, 'PongResponse', {
      apiId: this.api.apiId,
      integrationId: integration.integrationId,
      integrationResponseKey: '$default',
      templateSelectionExpression: '\\$default',
      responseTemplates: { $default: JSON.stringify({ action: 'pong' }) },
    });
    return route;
  }
}

/**
 * API Gateway authorizes a WebSocket once, at `$connect`; later messages and `$disconnect`
 * travel on that authorized connection and cannot carry an authorizer.
 */
export function acknowledgeConnectionScopedAuth(route: IConstruct): void {
  Validations.of(route).acknowledge({
    id: 'AwsSolutions-APIG4',
    reason:
      'WebSocket APIs authorize only the $connect route; this route runs on a connection that $connect already authorized (token authorizer or IAM) and API Gateway accepts no authorizer on it.',
  });
}

function connectAuthorizer(props: WebSocketApiProps): IWebSocketRouteAuthorizer {
  if (props.options.authMode === 'iam') return new WebSocketIamAuthorizer();
  if (!props.authorize) throw new Error('token mode needs the authorize function');
  return new WebSocketLambdaAuthorizer('TokenAuthorizer', props.authorize, {
    // No Authorization header: API Gateway answers 401 without invoking the authorizer.
    identitySource: ['route.request.header.Authorization'],
  });
}

// One JSON line per event. No headers: the Authorization header carries the join token.
const ACCESS_LOG_FORMAT = AccessLogFormat.custom(
  JSON.stringify({
    requestId: '$context.requestId',
    connectionId: '$context.connectionId',
    eventType: '$context.eventType',
    routeKey: '$context.routeKey',
    status: '$context.status',
    requestTimeEpoch: '$context.requestTimeEpoch',
    sourceIp: '$context.identity.sourceIp',
    userArn: '$context.identity.userArn',
    error: '$context.error.message',
    authorizerError: '$context.authorizer.error',
    integrationError: '$context.integration.error',
    integrationLatency: '$context.integration.latency',
  }),
);
