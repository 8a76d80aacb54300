import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { ENV } from '../../lib/config.ts';
import { actionsOf, statementsOfRole } from './policy-statements.ts';
import { synthTemplate } from './synth-stack.ts';

const ROLES = {
  authorize: 'Functions/Authorize/Role',
  connect: 'Functions/Connect/Role',
  disconnect: 'Functions/Disconnect/Role',
  message: 'Functions/Message/Role',
  sweeper: 'Sweep/Sweeper/Role',
  ec2StateChange: 'InstanceState/Function/Role',
  rollout: 'Rollout/Function/Role',
};

const ZONES = {
  actions: ['dynamodb:UpdateItem'],
  partitions: ['ZONE*'],
  resource: expect.stringMatching(/"Fn::GetAtt":\["RegistryTable[0-9A-F]+","Arn"\]/),
};
/** Connect reads its namespace's live count from the zone counters, and moves them. */
const ZONES_READ = { ...ZONES, actions: ['dynamodb:Query', 'dynamodb:UpdateItem'] };
/** Namespace settings (quotas, networks, ranges) and the connect-rate counters: connect only. */
const TENANT_LIMITS = [
  {
    actions: ['dynamodb:GetItem'],
    partitions: ['NSCONFIG'],
    resource: expect.stringMatching(/"Fn::GetAtt":\["RegistryTable[0-9A-F]+","Arn"\]/),
  },
  {
    actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
    partitions: ['RATE#*'],
    resource: expect.stringMatching(/"Fn::GetAtt":\["RegistryTable[0-9A-F]+","Arn"\]/),
  },
];
/** The address claims (an address is unique within a network): connect only. */
const ADDRESSES = {
  actions: ['dynamodb:GetItem', 'dynamodb:PutItem'],
  partitions: ['ADDR#*'],
  resource: expect.stringMatching(/"Fn::GetAtt":\["RegistryTable[0-9A-F]+","Arn"\]/),
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
    expect(Object.keys(functions)).toHaveLength(7);
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
        }),
      },
    });
  });

  it('map no stack trace through source maps at run time: the first error would pay for it', () => {
    // bench/first-error.ts measures it; the maps are kept in the asset for the operator
    // (scripts/decode-stack.ts).
    const functions = Object.values(template.findResources('AWS::Lambda::Function'));
    expect(functions.length).toBeGreaterThan(5);
    for (const fn of functions) {
      expect(JSON.stringify(fn.Properties.Environment ?? {})).not.toContain('source-maps');
    }
  });

  it('pass the configured grace period and maximum connection age to the functions', () => {
    const template = synthTemplate({ context: { gracePeriod: '10m', maxConnectionAge: '150m' } });
    const functions = template.findResources('AWS::Lambda::Function', {
      Properties: {
        Environment: {
          Variables: Match.objectLike({
            [ENV.gracePeriod]: '10m',
            [ENV.maxConnectionAge]: '2h30m',
          }),
        },
      },
    });
    expect(Object.keys(functions)).toHaveLength(7);
  });

  it('log to their own log group with a retention', () => {
    template.resourcePropertiesCountIs('AWS::Logs::LogGroup', { RetentionInDays: 30 }, 7);
    template.hasResourceProperties('AWS::Lambda::Function', {
      LoggingConfig: { LogFormat: 'JSON', LogGroup: { Ref: Match.stringLikeRegexp('Logs') } },
    });
  });

  /** The DynamoDB statements of a role: actions -> the partitions and resources they name. */
  function dynamoGrants(rolePath: string, of: Template = template) {
    return statementsOfRole(of, rolePath)
      .filter((s) => actionsOf([s]).some((a) => a.startsWith('dynamodb:')))
      .map((s) => ({
        actions: actionsOf([s]),
        partitions: (s as { Condition?: Record<string, Record<string, string[]>> }).Condition?.[
          'ForAllValues:StringLike'
        ]?.['dynamodb:LeadingKeys'],
        resource: JSON.stringify(s.Resource),
      }));
  }

  const TABLE = /"Fn::GetAtt":\["RegistryTable[0-9A-F]+","Arn"\]/;

  it('the authorizer may only GetItem on the TOKEN partition', () => {
    expect(dynamoGrants(ROLES.authorize)).toEqual([
      {
        actions: ['dynamodb:GetItem'],
        partitions: ['TOKEN'],
        resource: expect.stringMatching(TABLE),
      },
    ]);
  });

  it('connect may read, update and delete entries and read groups, in namespace partitions, claim addresses, and read and count its tenant limits', () => {
    expect(dynamoGrants(ROLES.connect)).toEqual([
      {
        // PutItem: the history item of an entry its address claim replaced.
        actions: [
          'dynamodb:DeleteItem',
          'dynamodb:GetItem',
          'dynamodb:PutItem',
          'dynamodb:UpdateItem',
        ],
        partitions: ['NS#*'],
        resource: expect.stringMatching(TABLE),
      },
      ZONES_READ,
      ADDRESSES,
      ...TENANT_LIMITS,
    ]);
  });

  it('connect in IAM mode also records connections, reads allow rules and terminated instances', () => {
    const iam = synthTemplate({ context: { authMode: 'iam' } });
    expect(dynamoGrants(ROLES.connect, iam)).toEqual([
      expect.objectContaining({ partitions: ['NS#*'] }),
      ZONES_READ,
      ADDRESSES,
      ...TENANT_LIMITS,
      {
        actions: ['dynamodb:PutItem'],
        partitions: ['CONN#*'],
        resource: expect.stringMatching(TABLE),
      },
      {
        actions: ['dynamodb:GetItem'],
        partitions: ['POLICY'],
        resource: expect.stringMatching(TABLE),
      },
      {
        actions: ['dynamodb:GetItem'],
        partitions: ['TERMINATED#*'],
        resource: expect.stringMatching(TABLE),
      },
    ]);
  });

  it('disconnect may update entries and read and forget connection records', () => {
    expect(dynamoGrants(ROLES.disconnect)).toEqual([
      {
        actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
        partitions: ['NS#*'],
        resource: expect.stringMatching(TABLE),
      },
      {
        actions: ['dynamodb:DeleteItem', 'dynamodb:GetItem'],
        partitions: ['CONN#*'],
        resource: expect.stringMatching(TABLE),
      },
      ZONES,
    ]);
  });

  it('message may update entries (health) and read connection records', () => {
    expect(dynamoGrants(ROLES.message)).toEqual([
      {
        actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
        partitions: ['NS#*'],
        resource: expect.stringMatching(TABLE),
      },
      {
        actions: ['dynamodb:GetItem'],
        partitions: ['CONN#*'],
        resource: expect.stringMatching(TABLE),
      },
    ]);
  });

  it('the sweeper may query the sweep index, delete entries, keep its own state and migrate', () => {
    expect(dynamoGrants(ROLES.sweeper)).toEqual([
      {
        // PutItem: a swept entry's history item.
        actions: [
          'dynamodb:DeleteItem',
          'dynamodb:GetItem',
          'dynamodb:PutItem',
          'dynamodb:UpdateItem',
        ],
        partitions: ['NS#*'],
        resource: expect.stringMatching(TABLE),
      },
      {
        actions: ['dynamodb:DeleteItem'],
        partitions: ['CONN#*'],
        resource: expect.stringMatching(TABLE),
      },
      {
        actions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
        partitions: ['SWEEPER', 'CONFIG'],
        resource: expect.stringMatching(TABLE),
      },
      {
        actions: ['dynamodb:DeleteItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
        partitions: ['ZONE*'],
        resource: expect.stringMatching(TABLE),
      },
      // Lane 0 reads every heartbeat lane's item in one Query.
      {
        actions: ['dynamodb:Query'],
        partitions: ['SWEEPER'],
        resource: expect.stringMatching(TABLE),
      },
      // The namespaces whose departures it reads, each from its own sweep index keys.
      {
        actions: ['dynamodb:Query'],
        partitions: ['NAMESPACES'],
        resource: expect.stringMatching(TABLE),
      },
      // Whether a group's heartbeat changed (before each pass), and the namespaces' quotas.
      {
        actions: ['dynamodb:GetItem'],
        partitions: ['HBCHANGES', 'NSCONFIG'],
        resource: expect.stringMatching(TABLE),
      },
      {
        actions: ['dynamodb:Query'],
        partitions: undefined,
        resource: expect.stringMatching(/RegistryTable[0-9A-F]+","Arn"\]},"\/index\/sweep"/),
      },
    ]);
  });

  it('the rollout function reads and updates entries, keeps its records, and deletes only for group removals', () => {
    expect(dynamoGrants(ROLES.rollout)).toEqual([
      {
        actions: [
          'dynamodb:DeleteItem',
          'dynamodb:GetItem',
          'dynamodb:PutItem',
          'dynamodb:Query',
          'dynamodb:UpdateItem',
        ],
        partitions: ['NS#*'],
        resource: expect.stringMatching(TABLE),
      },
      {
        actions: ['dynamodb:Query'],
        partitions: ['NAMESPACES'],
        resource: expect.stringMatching(TABLE),
      },
      {
        actions: [
          'dynamodb:DeleteItem',
          'dynamodb:GetItem',
          'dynamodb:PutItem',
          'dynamodb:Query',
          'dynamodb:UpdateItem',
        ],
        partitions: ['ROLLOUT'],
        resource: expect.stringMatching(TABLE),
      },
      {
        actions: ['dynamodb:GetItem', 'dynamodb:PutItem'],
        partitions: ['CONFIG'],
        resource: expect.stringMatching(TABLE),
      },
      {
        actions: ['dynamodb:DeleteItem'],
        partitions: ['CONN#*'],
        resource: expect.stringMatching(TABLE),
      },
    ]);
  });

  it('run the rollout function every minute, and let it close connections (DELETE) but never send', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^RolloutFunction'), 'Arn'] },
        }),
      ],
    });
    const api = statementsOfRole(template, ROLES.rollout).filter((s) =>
      actionsOf([s]).includes('execute-api:ManageConnections'),
    );
    expect(JSON.stringify(api.map((s) => s.Resource))).toMatch(/\/DELETE\/@connections\/\*/);
    expect(JSON.stringify(api.map((s) => s.Resource))).not.toMatch(/POST/);
  });

  it('the EC2 state-change function may only query the instance index (keys) and delete entries (keeping their history)', () => {
    expect(dynamoGrants(ROLES.ec2StateChange)).toEqual([
      {
        actions: ['dynamodb:DeleteItem', 'dynamodb:PutItem'],
        partitions: ['NS#*'],
        resource: expect.stringMatching(TABLE),
      },
      ZONES,
      {
        actions: ['dynamodb:Query'],
        partitions: undefined,
        resource: expect.stringMatching(/RegistryTable[0-9A-F]+","Arn"\]},"\/index\/instance"/),
      },
    ]);
  });

  it('run the EC2 state-change function on shutting-down and terminated instances only, by default', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: {
        source: ['aws.ec2'],
        'detail-type': ['EC2 Instance State-change Notification'],
        detail: { state: ['shutting-down', 'terminated'] },
      },
      Targets: [Match.objectLike({ RetryPolicy: Match.objectLike({ MaximumRetryAttempts: 3 }) })],
    });
    const stopping = synthTemplate({ context: { ec2States: 'terminated,stopping,stopped' } });
    stopping.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: Match.objectLike({ detail: { state: ['terminated', 'stopping', 'stopped'] } }),
    });
  });

  it('pass the fail-static options to the functions', () => {
    const tuned = synthTemplate({
      context: { disruptionThreshold: '70%', holdBound: '30m', secondaryDeletesPerSecond: '0.5' },
    });
    const functions = tuned.findResources('AWS::Lambda::Function', {
      Properties: {
        Environment: {
          Variables: Match.objectLike({
            [ENV.disruptionThreshold]: '0.7',
            [ENV.holdBound]: '30m',
            [ENV.secondaryDeletesPerSecond]: '0.5',
            [ENV.disruptionWindow]: '5m',
            [ENV.ec2States]: 'shutting-down,terminated',
          }),
        },
      },
    });
    expect(Object.keys(functions)).toHaveLength(7);
  });

  it("pass the operator's agent skew floor to the functions, and none by default", () => {
    const floored = synthTemplate({ context: { oldestAgentVersion: '0.1' } });
    const withFloor = floored.findResources('AWS::Lambda::Function', {
      Properties: {
        Environment: { Variables: Match.objectLike({ [ENV.oldestAgentVersion]: '0.1' }) },
      },
    });
    expect(Object.keys(withFloor)).toHaveLength(7);
    const functions = Object.values(template.findResources('AWS::Lambda::Function')) as {
      Properties: { Environment?: { Variables?: Record<string, unknown> } };
    }[];
    expect(
      functions.filter((f) => f.Properties.Environment?.Variables?.[ENV.oldestAgentVersion]),
    ).toEqual([]);
  });

  it.each(Object.keys(ROLES) as (keyof typeof ROLES)[])(
    'give the %s function no Scan, batch or transact action and no table-wide write',
    (name) => {
      for (const grant of dynamoGrants(ROLES[name])) {
        for (const action of grant.actions) {
          expect(action).toMatch(/^dynamodb:(GetItem|PutItem|UpdateItem|DeleteItem|Query)$/);
        }
        if (!grant.actions.includes('dynamodb:Query')) expect(grant.partitions).toBeDefined();
      }
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

  it('give exactly disconnect GET @connections, the sweeper GET, DELETE and POST, and message DELETE, on this stage only', () => {
    const lookups = (rolePath: string) =>
      statementsOfRole(template, rolePath).filter((s) =>
        actionsOf([s]).includes('execute-api:ManageConnections'),
      );
    for (const name of ['authorize', 'connect'] as const) {
      expect(lookups(ROLES[name]), name).toEqual([]);
    }
    const [lookup, ...more] = lookups(ROLES.disconnect);
    expect(more).toEqual([]);
    expect(JSON.stringify(lookup?.Resource)).toMatch(/\/v1\/GET\/@connections\/\*"\]\]\}$/);
    // The sweeper asks (GET), closes a connection silent past its heartbeat (DELETE) and
    // tells a live agent its group's changed heartbeat (POST).
    const sweeper = JSON.stringify(lookups(ROLES.sweeper).map((s) => s.Resource));
    expect(sweeper).toMatch(/\/v1\/GET\/@connections\/\*"/);
    expect(sweeper).toMatch(/\/v1\/DELETE\/@connections\/\*"/);
    expect(sweeper).toMatch(/\/v1\/POST\/@connections\/\*"/);
    // The message function closes a connection over its message budget: DELETE, nothing else.
    const [closing, ...others] = lookups(ROLES.message);
    expect(others).toEqual([]);
    expect(JSON.stringify(closing?.Resource)).toMatch(/\/v1\/DELETE\/@connections\/\*"\]\]\}$/);
  });

  it('tell disconnect, message, the sweeper and the rollout function where the management endpoint is', () => {
    const withUrl = template.findResources('AWS::Lambda::Function', {
      Properties: {
        Environment: {
          Variables: Match.objectLike({
            [ENV.connectionsUrl]: {
              'Fn::Join': [
                '',
                Match.arrayWith(['https://', { Ref: Match.stringLikeRegexp('^WebSocketApi') }]),
              ],
            },
          }),
        },
      },
    });
    expect(Object.keys(withUrl).sort()).toEqual([
      expect.stringMatching(/^FunctionsDisconnect/),
      expect.stringMatching(/^FunctionsMessage/),
      expect.stringMatching(/^RolloutFunction/),
      expect.stringMatching(/^SweepSweeper/),
    ]);
  });

  it('pass the sweep and liveness intervals to every function', () => {
    const template = synthTemplate({ context: { sweepRate: '2m', livenessInterval: '10m' } });
    const functions = template.findResources('AWS::Lambda::Function', {
      Properties: {
        Environment: {
          Variables: Match.objectLike({ [ENV.sweepInterval]: '2m', [ENV.livenessInterval]: '10m' }),
        },
      },
    });
    expect(Object.keys(functions)).toHaveLength(7);
  });
});
