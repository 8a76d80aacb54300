import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { synthTemplate } from './synth-stack.ts';

const cluster = {
  projectorClusterName: 'prod',
  projectorEndpoint: 'https://ABC123.gr7.eu-west-1.eks.amazonaws.com',
  projectorCertificateAuthority: 'LS0tLS1CRUdJTg==',
};

describe('the Kubernetes projector in the stack', () => {
  it('keeps a keys-only stream on the table so the projector can be turned on later', () => {
    synthTemplate().hasResourceProperties('AWS::DynamoDB::Table', {
      StreamSpecification: { StreamViewType: 'KEYS_ONLY' },
    });
  });

  it('is not deployed unless a cluster is named', () => {
    const template = synthTemplate();
    expect(template.findResources('AWS::Lambda::EventSourceMapping')).toEqual({});
  });

  it('is triggered by the registry table stream when a cluster is named', () => {
    const template = synthTemplate({ context: cluster });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^RegistryTable'), 'StreamArn'] },
      BisectBatchOnFunctionError: true,
    });
  });
});
