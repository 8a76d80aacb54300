import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { ENV } from '../../lib/config.ts';
import { actionsOf, statementsOfRole } from './policy-statements.ts';
import { synthTemplate } from './synth-stack.ts';

const WRITE_ACTIONS = [
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:BatchWriteItem',
];
const ROLES = {
  authorize: 'Functions/Authorize/Role',
  connect: 'Functions/Connect/Role',
  disconnect: 'Functions/Disconnect/Role',
  message: 'Functions/Message/Role',
  sweeper: 'Sweep/Sweeper/Role',
};

describe('functions', () => {
  let template: Template;
  beforeAll(() => {
    template = synthTemplate();
  });

  it('run on nodejs22.x on arm64 with the ESM handler', () => {
    const functions = template.findResources('AWS::Lambda::Function', {
      Properties: { Runtime: 'nodejs22.x', Architectures: ['arm64'], Handler: 'index.handler' },
    });
    expect(Object.keys(functions)).toHaveLength(5);
  });

  it('get the table name, the sweep policy, the auth mode and the Powertools settings', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          [ENV.tableName]: { Ref: Match.stringLikeRegexp('^RegistryTable') },
          [ENV.gracePeriod]: '5m',
          [ENV.maxConnectionAge]: '2h',
          [ENV.authMode]: 'token',
          POWERTOOLS_SERVICE_NAME: 'workload-registrar',
          POWERTOOLS_METRICS_NAMESPACE: 'WorkloadRegistrar',
          NODE_OPTIONS: '--enable-source-maps',
        }),
      },
    });
  });

  it('pass the configured grace period and maximum connection age to the functions', () => {
    const template = synthTemplate({ context: { gracePeriod: '10m', maxConnectionAge: '90m' } });
    const functions = template.findResources('AWS::Lambda::Function', {
      Properties: {
        Environment: {
          Variables: Match.objectLike({
            [ENV.gracePeriod]: '10m',
            [ENV.maxConnectionAge]: '1h30m',
          }),
        },
      },
    });
    expect(Object.keys(functions)).toHaveLength(5);
  });

  it('log to their own log group with a retention', () => {
    template.resourcePropertiesCountIs('AWS::Logs::LogGroup', { RetentionInDays: 30 }, 5);
    template.hasResourceProperties('AWS::Lambda::Function', {
      LoggingConfig: { LogFormat: 'JSON', LogGroup: { Ref: Match.stringLikeRegexp('Logs') } },
    });
  });

  it('give the authorizer read access to the table and no write', () => {
    const actions = actionsOf(statementsOfRole(template, ROLES.authorize));
    expect(actions).toContain('dynamodb:GetItem');
    for (const write of WRITE_ACTIONS) expect(actions).not.toContain(write);
  });

  it.each(['connect', 'disconnect', 'message', 'sweeper'] as const)(
    'give the %s function conditional writes on the table',
    (name) => {
      const actions = actionsOf(statementsOfRole(template, ROLES[name]));
      expect(actions).toEqual(
        expect.arrayContaining([
          'dynamodb:GetItem',
          'dynamodb:Query',
          'dynamodb:UpdateItem',
          'dynamodb:DeleteItem',
        ]),
      );
    },
  );

  it.each(Object.keys(ROLES) as (keyof typeof ROLES)[])(
    'name a resource in every statement of the %s function (no "*")',
    (name) => {
      for (const statement of statementsOfRole(template, ROLES[name])) {
        const resources = Array.isArray(statement.Resource)
          ? statement.Resource
          : [statement.Resource];
        expect(resources, JSON.stringify(statement.Action)).not.toContain('*');
      }
    },
  );

  it('write logs only to their own log group, not through AWSLambdaBasicExecutionRole', () => {
    const roles = template.findResources('AWS::IAM::Role', {
      Properties: {
        AssumeRolePolicyDocument: Match.objectLike({
          Statement: [Match.objectLike({ Principal: { Service: 'lambda.amazonaws.com' } })],
        }),
      },
    });
    for (const role of Object.values(roles))
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    const logStatements = statementsOfRole(template, ROLES.connect).filter((s) =>
      actionsOf([s]).includes('logs:PutLogEvents'),
    );
    expect(logStatements).toEqual([
      expect.objectContaining({
        Resource: { 'Fn::GetAtt': [expect.stringMatching(/^FunctionsConnectLogs/), 'Arn'] },
      }),
    ]);
  });

  it('do not get the connection management API: replies travel as route responses', () => {
    for (const rolePath of Object.values(ROLES)) {
      expect(actionsOf(statementsOfRole(template, rolePath))).not.toContain(
        'execute-api:ManageConnections',
      );
    }
  });
});
