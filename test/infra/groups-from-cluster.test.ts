import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { ROLLOUT_ENV } from '../../lib/rollout/rollout-config.ts';
import { encodeGroup, GROUP_ITEM_ATTRIBUTES } from '../../lib/store/item-codec.ts';
import { actionsOf, statementsOfRole } from './policy-statements.ts';
import { synthTemplate } from './synth-stack.ts';

/**
 * Groups from the cluster in the stack (real `cdk synth` assertions): the stack option turns it
 * on, the projector gets a sync schedule of its own and may write group items only, and the
 * rollout function knows the mode (it records it for the CLI).
 */
const cluster = {
  projectorClusterName: 'prod',
  projectorEndpoint: 'https://ABC123.gr7.eu-west-1.eks.amazonaws.com',
  projectorCertificateAuthority: 'LS0tLS1CRUdJTg==',
};

describe('groupSource=cluster', () => {
  const template = synthTemplate({
    context: { ...cluster, groupSource: 'cluster', groupSelector: 'registrar=on' },
  });

  it('syncs every minute with its own event, the sync alone', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^ProjectorFunction'), 'Arn'] },
          Input: '{"groupSync":true}',
        }),
      ],
    });
  });

  it('tells the projector and the rollout function where groups come from', () => {
    for (const prefix of ['^ProjectorFunction', '^RolloutFunction']) {
      const found = template.findResources('AWS::Lambda::Function', {
        Properties: {
          Environment: {
            Variables: Match.objectLike({
              [ROLLOUT_ENV.groupSource]: 'cluster',
              [ROLLOUT_ENV.groupSelector]: 'registrar=on',
            }),
          },
        },
      });
      expect(Object.keys(found).filter((id) => new RegExp(prefix).test(id))).toHaveLength(1);
    }
  });

  it('lets the projector put group items only: by attribute, in namespace partitions, and never delete', () => {
    const statements = statementsOfRole(template, 'Projector/Function/Role');
    const puts = statements.filter((s) => actionsOf([s]).includes('dynamodb:PutItem'));
    expect(puts).toContainEqual(
      expect.objectContaining({
        Condition: {
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['NS#*'] },
          'ForAllValues:StringEquals': { 'dynamodb:Attributes': [...GROUP_ITEM_ATTRIBUTES] },
          StringEqualsIfExists: { 'dynamodb:ReturnValues': ['NONE'] },
        },
      }),
    );
    expect(actionsOf(statements)).not.toContain('dynamodb:DeleteItem');
    expect(actionsOf(statements)).not.toContain('dynamodb:Scan');
  });
});

describe('groupSource=registry (the default)', () => {
  it('gives the projector no table write at all and no sync schedule', () => {
    const template = synthTemplate({ context: cluster });
    const actions = actionsOf(statementsOfRole(template, 'Projector/Function/Role'));
    expect(actions.filter((a) => /^dynamodb:(Put|Update|Delete)/.test(a))).toEqual([]);
    const rules = Object.values(template.findResources('AWS::Events::Rule'));
    expect(rules.filter((r) => r.Properties.Targets?.[0]?.Input !== undefined)).toEqual([]);
  });
});

describe('the group item attributes the sync may write', () => {
  it('are exactly what the catalog writes for a group', () => {
    const item = encodeGroup(
      {
        group: {
          apiVersion: 'networking.istio.io/v1',
          kind: 'WorkloadGroup',
          metadata: { name: 'web', namespace: 'shop' },
          spec: { template: {} },
        },
        generation: 1,
      },
      1,
    );
    // The catalog's put adds `writeId` (its own id, to recognise a retried write).
    expect([...Object.keys(item), 'writeId'].sort()).toEqual([...GROUP_ITEM_ATTRIBUTES].sort());
  });
});

describe('invalid group options fail the synth, naming the option and the value', () => {
  it.each([
    [
      { groupSource: 'git' },
      "invalid stack option groupSource (value 'git'): must be 'registry' or 'cluster'",
    ],
    [{ groupSource: 'cluster' }, 'groups from the cluster need the projector'],
    [
      { ...cluster, groupSelector: 'a=b' },
      "invalid stack option groupSelector (value 'a=b'): applies only with groupSource=cluster",
    ],
    [
      { ...cluster, groupSource: 'cluster', groupSelector: 'a;rm' },
      'must be a Kubernetes label selector',
    ],
    [
      { ...cluster, groupSource: 'cluster', groupSyncMinutes: '0' },
      "invalid stack option groupSyncMinutes (value '0')",
    ],
  ])('%j', (context, message) => {
    expect(() => synthTemplate({ context })).toThrow(message);
  });
});
