import { Match, type Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { synthTemplate } from './synth-stack.ts';

const cluster = {
  projectorClusterName: 'prod',
  projectorEndpoint: 'https://ABC123.gr7.eu-west-1.eks.amazonaws.com',
  projectorCertificateAuthority: 'LS0tLS1CRUdJTg==',
};

/** The mesh function and its role, found by the role's description. */
function meshFunction(template: Template): { id: string; role: string } {
  const roles = Object.keys(
    template.findResources('AWS::IAM::Role', {
      Properties: { Description: Match.stringLikeRegexp('^workload-registrar mesh identity') },
    }),
  );
  expect(roles).toHaveLength(1);
  const role = roles[0] as string;
  const functions = Object.keys(
    template.findResources('AWS::Lambda::Function', {
      Properties: { Role: { 'Fn::GetAtt': [role, 'Arn'] } },
    }),
  );
  expect(functions).toHaveLength(1);
  return { id: functions[0] as string, role };
}

/** Every action the role's policies allow. */
function actionsOf(
  template: Template,
  role: string,
): { action: string; condition: unknown; resource: unknown }[] {
  const policies = template.findResources('AWS::IAM::Policy', {
    Properties: { Roles: Match.arrayWith([{ Ref: role }]) },
  });
  return Object.values(policies).flatMap((policy) =>
    (
      policy.Properties as {
        PolicyDocument: {
          Statement: { Action: string | string[]; Condition?: unknown; Resource?: unknown }[];
        };
      }
    ).PolicyDocument.Statement.flatMap((statement) =>
      [statement.Action].flat().map((action) => ({
        action,
        condition: statement.Condition,
        resource: statement.Resource,
      })),
    ),
  );
}

describe('the mesh identity function in the stack', () => {
  it('is not deployed, and no sidecar route exists, without a cluster', () => {
    const template = synthTemplate();
    template.resourcePropertiesCountIs('AWS::ApiGatewayV2::Route', { RouteKey: 'sidecar' }, 0);
    expect(
      template.findResources('AWS::Lambda::Function', {
        Properties: {
          Environment: { Variables: { REGISTRAR_MESH_TOKEN_AUDIENCE: Match.anyValue() } },
        },
      }),
    ).toEqual({});
  });

  it('answers the sidecar route, in the projector’s cluster, with the mesh options', () => {
    const template = synthTemplate({
      context: { ...cluster, meshTokenLifetime: '30m', meshIstiodAddress: '10.0.0.50' },
    });
    const { id } = meshFunction(template);
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          REGISTRAR_EKS_CLUSTER_NAME: 'prod',
          REGISTRAR_MESH_TOKEN_LIFETIME: '30m',
          REGISTRAR_MESH_ISTIOD_ADDRESS: '10.0.0.50',
        }),
      },
    });
    template.hasResourceProperties('AWS::ApiGatewayV2::Route', {
      RouteKey: 'sidecar',
      RouteResponseSelectionExpression: '$default',
    });
    // The route's integration invokes this function and no other.
    const sidecarIntegration = Object.values(
      template.findResources('AWS::ApiGatewayV2::Integration'),
    ).filter((integration) => JSON.stringify(integration).includes(id));
    expect(sidecarIntegration).toHaveLength(1);
  });

  it('holds least privilege: reads only, by partition, and no EKS or write permission at all', () => {
    const template = synthTemplate({ context: cluster });
    const { role } = meshFunction(template);
    const allowed = actionsOf(template, role);
    const dynamo = allowed.filter(({ action }) => action.startsWith('dynamodb:'));
    expect(dynamo.map(({ action }) => action)).toEqual(['dynamodb:GetItem']);
    expect(dynamo[0]?.condition).toEqual({
      'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['NS#*', 'TOKEN'] },
    });
    // Beside its logs, one API Gateway permission: closing a connection over its budget of
    // asks (DELETE @connections), never sending to one.
    const others = allowed.filter(
      ({ action }) => !action.startsWith('dynamodb:') && !action.startsWith('logs:'),
    );
    expect(others.map(({ action }) => action)).toEqual(['execute-api:ManageConnections']);
    expect(JSON.stringify(others[0]?.resource)).toMatch(/\/DELETE\/@connections\/\*/);
    expect(allowed.some(({ action }) => action.startsWith('eks:'))).toBe(false);
  });

  it('in IAM mode reads the connection record and the allow rule instead of join tokens', () => {
    const template = synthTemplate({ context: { ...cluster, authMode: 'iam' } });
    const { role } = meshFunction(template);
    const dynamo = actionsOf(template, role).filter(({ action }) => action.startsWith('dynamodb:'));
    expect(dynamo[0]?.condition).toEqual({
      'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['NS#*', 'CONN#*', 'POLICY'] },
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          REGISTRAR_AUTH_MODE: 'iam',
          REGISTRAR_INSTANCE_ATTESTATION: 'required',
        }),
      },
    });
  });

  it('refuses a bad mesh option at synth, naming it', () => {
    expect(() => synthTemplate({ context: { ...cluster, meshTokenLifetime: '2h' } })).toThrow(
      "meshTokenLifetime (value '2h')",
    );
  });
});
