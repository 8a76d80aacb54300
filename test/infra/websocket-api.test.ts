import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { routeThrottle } from '../../infra/constructs/websocket-api.ts';
import { synthTemplate } from './synth-stack.ts';

/** The integration a route key targets, as the route's `Target` names it. */
function integrationOf(template: Template, routeKey: string): Record<string, unknown> {
  const routes = template.findResources('AWS::ApiGatewayV2::Route', {
    Properties: { RouteKey: routeKey },
  });
  const [route] = Object.values(routes);
  const target = JSON.stringify(route?.Properties.Target);
  const integrationId = /"Ref":"([^"]+)"/.exec(target)?.[1] ?? '';
  return template.toJSON().Resources[integrationId].Properties;
}

function lambdaUri(functionLogicalIdPrefix: string) {
  return Match.objectLike({
    'Fn::Join': Match.arrayWith([
      Match.arrayWith([
        { 'Fn::GetAtt': [Match.stringLikeRegexp(`^${functionLogicalIdPrefix}`), 'Arn'] },
      ]),
    ]),
  });
}

describe('WebSocket API (token mode)', () => {
  let template: Template;
  beforeAll(() => {
    template = synthTemplate();
  });

  it('routes messages by the action field of the JSON body', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', {
      ProtocolType: 'WEBSOCKET',
      RouteSelectionExpression: '$request.body.action',
    });
  });

  it('puts $connect behind the token REQUEST authorizer reading the Authorization header', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'REQUEST',
      IdentitySource: ['route.request.header.Authorization'],
      AuthorizerUri: lambdaUri('FunctionsAuthorizeFunction'),
    });
    template.hasResourceProperties('AWS::ApiGatewayV2::Route', {
      RouteKey: '$connect',
      AuthorizationType: 'CUSTOM',
      AuthorizerId: { Ref: Match.stringLikeRegexp('TokenAuthorizer') },
    });
  });

  it('sends $connect to the connect function and $disconnect to the disconnect function', () => {
    expect(integrationOf(template, '$connect')).toMatchObject({
      IntegrationType: 'AWS_PROXY',
      IntegrationUri: {
        'Fn::Join': [
          '',
          expect.arrayContaining([
            { 'Fn::GetAtt': [expect.stringMatching(/^FunctionsConnectFunction/), 'Arn'] },
          ]),
        ],
      },
    });
    expect(integrationOf(template, '$disconnect')).toMatchObject({
      IntegrationType: 'AWS_PROXY',
      IntegrationUri: {
        'Fn::Join': [
          '',
          expect.arrayContaining([
            { 'Fn::GetAtt': [expect.stringMatching(/^FunctionsDisconnectFunction/), 'Arn'] },
          ]),
        ],
      },
    });
  });

  it.each(['health', 'describe', 'drain', '$default'])(
    'sends %s to the message function and returns its reply to the agent',
    (routeKey) => {
      expect(integrationOf(template, routeKey)).toMatchObject({
        IntegrationType: 'AWS_PROXY',
        IntegrationUri: {
          'Fn::Join': [
            '',
            expect.arrayContaining([
              { 'Fn::GetAtt': [expect.stringMatching(/^FunctionsMessageFunction/), 'Arn'] },
            ]),
          ],
        },
      });
      const routes = template.findResources('AWS::ApiGatewayV2::Route', {
        Properties: { RouteKey: routeKey, RouteResponseSelectionExpression: '$default' },
      });
      const [routeId] = Object.keys(routes);
      template.hasResourceProperties('AWS::ApiGatewayV2::RouteResponse', {
        RouteId: { Ref: routeId },
        RouteResponseKey: '$default',
      });
    },
  );

  it('answers ping with {"action":"pong"} from a MOCK integration, without a Lambda', () => {
    const integration = integrationOf(template, 'ping');
    expect(integration).toMatchObject({
      IntegrationType: 'MOCK',
      RequestTemplates: { $default: JSON.stringify({ statusCode: 200 }) },
    });
    template.hasResourceProperties('AWS::ApiGatewayV2::IntegrationResponse', {
      IntegrationResponseKey: '$default',
      ResponseTemplates: { $default: '{"action":"pong"}' },
    });
    template.hasResourceProperties('AWS::ApiGatewayV2::Route', {
      RouteKey: 'ping',
      RouteResponseSelectionExpression: '$default',
    });
  });

  it('throttles every route of the stage by default', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: 'v1',
      AutoDeploy: true,
      DefaultRouteSettings: Match.objectLike({
        ThrottlingRateLimit: Match.anyValue(),
        ThrottlingBurstLimit: Match.anyValue(),
        DetailedMetricsEnabled: true,
      }),
    });
  });

  it('sizes the route throttle to the fleet: 10,000 VMs by default', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      DefaultRouteSettings: Match.objectLike({
        ThrottlingRateLimit: 1576,
        ThrottlingBurstLimit: 3152,
      }),
    });
  });

  it.each([
    // steady 2 x N x (1/300 + 3/6480) per second, plus 3 messages x 500 connects/s
    [1_000, 1508, 3016],
    [100_000, 2260, 4520],
    // the burst capped by the account default (5,000)
    [1_000_000, 9093, 5000],
  ])('fleetSize=%i -> rate %i/s, burst %i', (fleetSize, rate, burst) => {
    expect(routeThrottle(fleetSize)).toEqual({ rateLimit: rate, burstLimit: burst });
    // A fleet's pings alone (every 5 minutes) stay well under the rate.
    expect(fleetSize / 300).toBeLessThan(rate / 1.5);
    const sized = synthTemplate({ context: { fleetSize: String(fleetSize) } });
    sized.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      DefaultRouteSettings: Match.objectLike({
        ThrottlingRateLimit: rate,
        ThrottlingBurstLimit: burst,
      }),
    });
  });

  it('leaves the account-wide logging role alone by default, and so writes no access logs', () => {
    // The role is one setting per account and region: setting it replaces the role every other
    // API there logs through. Without one, a stage with access logs fails to deploy.
    template.resourceCountIs('AWS::ApiGateway::Account', 0);
    const roles = Object.keys(template.findResources('AWS::IAM::Role'));
    expect(roles.filter((logicalId) => logicalId.startsWith('ApiGatewayLogs'))).toEqual([]);
    const [stage] = Object.values(template.findResources('AWS::ApiGatewayV2::Stage'));
    expect(stage?.Properties.AccessLogSettings).toBeUndefined();
    expect(stage?.DependsOn ?? []).not.toEqual(
      expect.arrayContaining([expect.stringMatching(/^ApiGatewayLogs/)]),
    );
  });

  it('writes access logs, without setting the role, where the account already has one', () => {
    const withLogs = synthTemplate({ options: { accessLogs: true } });
    withLogs.resourceCountIs('AWS::ApiGateway::Account', 0);
    withLogs.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      AccessLogSettings: {
        DestinationArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('AccessLogs'), 'Arn'] },
        Format: Match.stringLikeRegexp('\\$context\\.requestId'),
      },
    });
    // The Authorization header carries the join token.
    const [stage] = Object.values(withLogs.findResources('AWS::ApiGatewayV2::Stage'));
    expect(stage?.Properties.AccessLogSettings.Format).not.toMatch(/header|Authorization/i);
  });

  it('sets the account logging role when asked to, keeps it on teardown, and logs through it', () => {
    const withRole = synthTemplate({ options: { apiGatewayLogsRole: true } });
    withRole.hasResource('AWS::ApiGateway::Account', {
      DeletionPolicy: 'Retain',
      Properties: { CloudWatchRoleArn: { 'Fn::GetAtt': [Match.anyValue(), 'Arn'] } },
    });
    const [stage] = Object.values(withRole.findResources('AWS::ApiGatewayV2::Stage'));
    expect(stage?.Properties.AccessLogSettings).toBeDefined();
    expect(stage?.DependsOn).toEqual(
      expect.arrayContaining([expect.stringMatching(/^ApiGatewayLogsAccount/)]),
    );
  });

  it('honours accessLogs=false even with the role', () => {
    const noLogs = synthTemplate({ options: { apiGatewayLogsRole: true, accessLogs: false } });
    noLogs.resourceCountIs('AWS::ApiGateway::Account', 1);
    const [stage] = Object.values(noLogs.findResources('AWS::ApiGatewayV2::Stage'));
    expect(stage?.Properties.AccessLogSettings).toBeUndefined();
  });

  it('outputs the WebSocket URL of the stage', () => {
    template.hasOutput('WebSocketUrl', {
      Value: { 'Fn::Join': ['', Match.arrayWith(['wss://', Match.stringLikeRegexp('/v1$')])] },
    });
  });

  it('outputs the management endpoint that registrar delete closes connections through', () => {
    template.hasOutput('ManagementEndpoint', {
      Value: { 'Fn::Join': ['', Match.arrayWith(['https://', Match.stringLikeRegexp('/v1$')])] },
    });
  });
});
