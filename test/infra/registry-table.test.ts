import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { createTableInput } from '../../lib/store/table-definition.ts';
import { synthTemplate } from './synth-stack.ts';

describe('registry table', () => {
  let template: Template;
  beforeAll(() => {
    template = synthTemplate();
  });

  it('is on-demand with point-in-time recovery and deletion protection', () => {
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      DeletionProtectionEnabled: true,
    });
  });

  it('is retained when the stack is deleted or the table replaced', () => {
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
  });

  it('has the key schema and attributes the local runtime creates', () => {
    const local = createTableInput('registry');
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: local.KeySchema,
      AttributeDefinitions: Match.arrayWith(local.AttributeDefinitions),
    });
    const [table] = Object.values(template.findResources('AWS::DynamoDB::Table'));
    expect(table?.Properties.AttributeDefinitions).toHaveLength(local.AttributeDefinitions.length);
  });

  it('has the sparse sweep index the local runtime creates, projecting whole entries', () => {
    const local = createTableInput('registry');
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      GlobalSecondaryIndexes: local.GlobalSecondaryIndexes.map((index) =>
        Match.objectLike({
          IndexName: index.IndexName,
          KeySchema: index.KeySchema,
          Projection: index.Projection,
        }),
      ),
    });
  });

  it('outputs the table name for the CLI', () => {
    template.hasOutput('TableName', { Value: { Ref: Match.stringLikeRegexp('^RegistryTable') } });
  });
});
