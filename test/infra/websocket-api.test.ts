import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
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

  it('throttles every route of the stage by default and writes access logs', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: 'v1',
      AutoDeploy: true,
      DefaultRouteSettings: Match.objectLike({
        ThrottlingRateLimit: Match.anyValue(),
        ThrottlingBurstLimit: Match.anyValue(),
        DetailedMetricsEnabled: true,
      }),
      AccessLogSettings: {
        DestinationArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('AccessLogs'), 'Arn'] },
        Format: Match.stringLikeRegexp('\\$context\\.requestId'),
      },
    });
  });

  it('keeps the Authorization header (the join token) out of the access log', () => {
    const [stage] = Object.values(template.findResources('AWS::ApiGatewayV2::Stage'));
    expect(stage?.Properties.AccessLogSettings.Format).not.toMatch(/header|Authorization/i);
  });

  it('sets the account logging role that access logging needs, and keeps it on teardown', () => {
    template.hasResource('AWS::ApiGateway::Account', {
      DeletionPolicy: 'Retain',
      Properties: { CloudWatchRoleArn: { 'Fn::GetAtt': [Match.anyValue(), 'Arn'] } },
    });
    const [stage] = Object.values(template.findResources('AWS::ApiGatewayV2::Stage'));
    expect(stage?.DependsOn).toEqual(
      expect.arrayContaining([expect.stringMatching(/^ApiGatewayLogsAccount/)]),
    );
  });

  it('leaves the account logging role alone when asked to', () => {
    const template = synthTemplate({ options: { apiGatewayLogsRole: false } });
    template.resourceCountIs('AWS::ApiGateway::Account', 0);
  });

  it('outputs the WebSocket URL of the stage', () => {
    template.hasOutput('WebSocketUrl', {
      Value: { 'Fn::Join': ['', Match.arrayWith(['wss://', Match.stringLikeRegexp('/v1$')])] },
    });
  });
});
