import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { certificateOfRegion } from '../../lib/auth/aws-instance-identity-certs.ts';
import { ENV } from '../../lib/config.ts';
import { actionsOf, statementsOfRole } from './policy-statements.ts';
import { createStack, synthTemplate } from './synth-stack.ts';

/** The environment variables of the function whose logical id starts with `prefix`. */
function variablesOf(template: Template, prefix: string): Record<string, unknown> {
  const functions = template.findResources('AWS::Lambda::Function');
  const [, resource] =
    Object.entries(functions).find(([id]) => id.startsWith(prefix)) ?? ([] as never[]);
  return (resource as { Properties: { Environment: { Variables: Record<string, unknown> } } })
    .Properties.Environment.Variables;
}

describe('IAM auth mode', () => {
  let template: Template;
  beforeAll(() => {
    template = synthTemplate({ context: { authMode: 'iam' } });
  });

  it('authorizes $connect with IAM (SigV4) instead of the token authorizer', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Route', {
      RouteKey: '$connect',
      AuthorizationType: 'AWS_IAM',
    });
    template.resourceCountIs('AWS::ApiGatewayV2::Authorizer', 0);
  });

  it('deploys no authorize function', () => {
    const functions = template.findResources('AWS::Lambda::Function');
    expect(Object.keys(functions).some((id) => id.includes('Authorize'))).toBe(false);
    expect(Object.keys(functions)).toHaveLength(6);
  });

  it('tells the functions to check the caller against the stored IAM policies', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ [ENV.authMode]: 'iam' }) },
    });
  });

  it('outputs the $connect ARN the instance role must be allowed to invoke', () => {
    template.hasOutput('ConnectRouteArn', {
      Value: { 'Fn::Join': ['', Match.arrayWith([Match.stringLikeRegexp('/v1/\\$connect$')])] },
    });
  });
});

describe('instance attestation (IAM mode)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'stack-iid-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const publishedPem = certificateOfRegion('us-east-1').pem;

  it('requires the instance identity document by default, in the connect function only', () => {
    const template = synthTemplate({ context: { authMode: 'iam' } });

    expect(variablesOf(template, 'FunctionsConnect')[ENV.instanceAttestation]).toBe('required');
    expect(variablesOf(template, 'FunctionsConnect')[ENV.instanceIdentityCerts]).toBeUndefined();
    expect(variablesOf(template, 'FunctionsMessage')[ENV.instanceAttestation]).toBeUndefined();
  });

  it("trusts only the stack's own Region's certificate by default, by name", () => {
    const template = synthTemplate({ context: { authMode: 'iam' } });

    // The test stack is deployed to eu-west-1 (synth-stack.ts).
    expect(variablesOf(template, 'FunctionsConnect')[ENV.instanceIdentityRegions]).toBe(
      'eu-west-1',
    );
  });

  it('adds the Regions of -c instanceIdentityRegions, after its own', () => {
    const template = synthTemplate({
      context: { authMode: 'iam', instanceIdentityRegions: 'us-east-1, eu-central-1' },
    });

    expect(variablesOf(template, 'FunctionsConnect')[ENV.instanceIdentityRegions]).toBe(
      'eu-west-1,us-east-1,eu-central-1',
    );
  });

  it('refuses a Region whose certificate is not pinned, naming the option', () => {
    expect(() =>
      createStack({ context: { authMode: 'iam', instanceIdentityRegions: 'us-east-1,xx-mars-1' } }),
    ).toThrow(
      /instanceIdentityRegions \(value 'us-east-1,xx-mars-1'\): must name Regions whose certificate is pinned/,
    );
  });

  it('refuses instanceIdentityRegions beside instanceIdentityCerts, and in token mode', () => {
    const file = join(dir, 'one.pem');
    writeFileSync(file, `${publishedPem}\n`);
    expect(() =>
      createStack({
        context: {
          authMode: 'iam',
          instanceIdentityCerts: file,
          instanceIdentityRegions: 'us-east-1',
        },
      }),
    ).toThrow(/instanceIdentityCerts replaces AWS's certificates/);
    expect(() => createStack({ context: { instanceIdentityRegions: 'us-east-1' } })).toThrow(
      /instanceIdentityRegions \(value 'us-east-1'\): applies to authMode iam only/,
    );
  });

  it('makes it optional with -c instanceAttestation=optional', () => {
    const template = synthTemplate({
      context: { authMode: 'iam', instanceAttestation: 'optional' },
    });

    expect(variablesOf(template, 'FunctionsConnect')[ENV.instanceAttestation]).toBe('optional');
  });

  it('hands the connect function the certificates of -c instanceIdentityCerts=<pem>', () => {
    const file = join(dir, 'regions.pem');
    writeFileSync(file, `${publishedPem}\n`);

    const template = synthTemplate({ context: { authMode: 'iam', instanceIdentityCerts: file } });

    // The file travels in the function's code; the environment only names where it is.
    expect(variablesOf(template, 'FunctionsConnect')[ENV.instanceIdentityCerts]).toBe(
      '/var/task/instance-identity-certs.pem',
    );
  });

  it('refuses a certificates file that holds no certificate, naming the option and the path', () => {
    const file = join(dir, 'empty.pem');
    writeFileSync(file, 'nothing\n');

    expect(() =>
      createStack({ context: { authMode: 'iam', instanceIdentityCerts: file } }),
    ).toThrow(
      `invalid stack option instanceIdentityCerts (value '${file}'): holds no PEM certificate`,
    );
  });

  it('takes any number of certificates: they are not in the 4 KB environment', () => {
    const file = join(dir, 'four.pem');
    writeFileSync(file, [publishedPem, publishedPem, publishedPem, publishedPem].join('\n'));

    const template = synthTemplate({ context: { authMode: 'iam', instanceIdentityCerts: file } });

    const variables = variablesOf(template, 'FunctionsConnect');
    expect(variables[ENV.instanceIdentityCerts]).toBe('/var/task/instance-identity-certs.pem');
    expect(JSON.stringify(variables).length).toBeLessThan(4096);
  });

  it('refuses the attestation options in token mode, naming the option', () => {
    expect(() => createStack({ context: { instanceAttestation: 'required' } })).toThrow(
      /instanceAttestation \(value 'required'\): applies to authMode iam only/,
    );
  });

  it('refuses an attestation mode it does not know', () => {
    expect(() =>
      createStack({ context: { authMode: 'iam', instanceAttestation: 'always' } }),
    ).toThrow(/instanceAttestation \(value 'always'\): must be 'required' or 'optional'/);
  });

  it('sets no attestation in token mode', () => {
    const template = synthTemplate();

    expect(variablesOf(template, 'FunctionsConnect')[ENV.instanceAttestation]).toBeUndefined();
  });
});

describe('terminated instances (IAM mode)', () => {
  it('lets terminated instances through the EC2 rule whatever states remove entries', () => {
    const template = synthTemplate({ context: { authMode: 'iam', ec2States: 'stopping,stopped' } });

    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: Match.objectLike({
        detail: { state: ['stopping', 'stopped', 'shutting-down', 'terminated'] },
      }),
    });
    // Entries are still removed only for the configured states.
    expect(variablesOf(template, 'InstanceStateFunction')[ENV.ec2States]).toBe('stopping,stopped');
  });

  it('lets the EC2 function write, and connect read, only the TERMINATED# partition for it', () => {
    const template = synthTemplate({ context: { authMode: 'iam' } });
    const grantsOf = (role: string) =>
      statementsOfRole(template, role)
        .map((statement) => ({
          actions: actionsOf([statement]),
          partitions: (statement as { Condition?: Record<string, Record<string, string[]>> })
            .Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'],
        }))
        .filter((grant) => grant.partitions?.includes('TERMINATED#*'));

    expect(grantsOf('InstanceState/Function/Role')).toEqual([
      { actions: ['dynamodb:UpdateItem'], partitions: ['TERMINATED#*'] },
    ]);
    expect(grantsOf('Functions/Connect/Role')).toEqual([
      { actions: ['dynamodb:GetItem'], partitions: ['TERMINATED#*'] },
    ]);
  });

  it('grants nothing on it in token mode', () => {
    const template = synthTemplate();
    const all = statementsOfRole(template, 'InstanceState/Function/Role');
    expect(JSON.stringify(all)).not.toContain('TERMINATED#');
  });
});
