import { beforeAll, describe, expect, it } from 'vitest';
import { loadCfnSpec } from '../../scripts/cfn-spec.ts';
import { checkTemplate, type Finding } from '../../scripts/cfn-template-check.ts';
import { synthVariant, TEMPLATE_VARIANTS } from '../../scripts/template-variants.ts';

// biome-ignore lint/suspicious/noExplicitAny: each test breaks a template field by field.
type Loose = any;
type Template = {
  Resources: Record<string, { Type: string; Properties?: Loose; [key: string]: Loose }>;
};

const spec = loadCfnSpec();
const check = (template: unknown): Finding[] => checkTemplate(template as Template, spec);

/** The first resource of a type: its logical ID and definition, to break on purpose. */
function first(template: Template, type: string) {
  const found = Object.entries(template.Resources).find(([, r]) => r.Type === type);
  if (!found) throw new Error(`no ${type} in the template`);
  return { id: found[0], resource: found[1] };
}

describe('the synthesized templates against the CloudFormation resource specification', () => {
  for (const variant of TEMPLATE_VARIANTS) {
    it(`finds nothing in the ${variant.name} variant`, () => {
      expect(check(synthVariant(variant))).toEqual([]);
    });
  }
});

describe('the template check', () => {
  let synthesized: Template;
  let template: Template;
  beforeAll(() => {
    synthesized = synthVariant(TEMPLATE_VARIANTS[0] as (typeof TEMPLATE_VARIANTS)[0]) as Template;
  });
  // Each test breaks its own copy of the token-mode template.
  const fresh = () => {
    template = structuredClone(synthesized);
    return template;
  };

  it('refuses a property the resource type does not have', () => {
    const fn = first(fresh(), 'AWS::Lambda::Function');
    fn.resource.Properties.Runtimes = 'nodejs22.x';

    expect(check(template)).toEqual([
      {
        code: 'E3002',
        path: `Resources/${fn.id}/Properties/Runtimes`,
        message: "'Runtimes' is not a property of AWS::Lambda::Function",
      },
    ]);
  });

  it('refuses an unknown property inside a property type', () => {
    const table = first(fresh(), 'AWS::DynamoDB::Table');
    table.resource.Properties.PointInTimeRecoverySpecification = {
      PointInTimeRecoveryEnable: true,
    };

    expect(check(template)).toEqual([
      expect.objectContaining({
        code: 'E3002',
        path: `Resources/${table.id}/Properties/PointInTimeRecoverySpecification/PointInTimeRecoveryEnable`,
      }),
    ]);
  });

  it('refuses a resource without a required property', () => {
    const route = first(fresh(), 'AWS::ApiGatewayV2::Route');
    delete route.resource.Properties.RouteKey;

    expect(check(template)).toEqual([
      {
        code: 'E3003',
        path: `Resources/${route.id}/Properties`,
        message: "'RouteKey' is a required property of AWS::ApiGatewayV2::Route",
      },
    ]);
  });

  it('refuses a required property set to AWS::NoValue', () => {
    const fn = first(fresh(), 'AWS::Lambda::Function');
    fn.resource.Properties.Role = { Ref: 'AWS::NoValue' };

    expect(check(template).map((f) => f.code)).toEqual(['E3003']);
  });

  it('refuses a GetAtt of an attribute the target type does not have', () => {
    const table = first(fresh(), 'AWS::DynamoDB::Table');
    const mapping = first(template, 'AWS::Lambda::EventInvokeConfig');
    mapping.resource.Properties.FunctionName = { 'Fn::GetAtt': [table.id, 'StreamArns'] };

    expect(check(template)).toEqual([
      {
        code: 'E1010',
        path: `Resources/${mapping.id}/Properties/FunctionName/Fn::GetAtt`,
        message: `AWS::DynamoDB::Table '${table.id}' has no attribute 'StreamArns' (it has: Arn, StreamArn)`,
      },
    ]);
  });

  it('refuses a GetAtt, Ref or Sub variable naming a resource the template does not have', () => {
    const fn = first(fresh(), 'AWS::Lambda::Function');
    fn.resource.Properties.Role = { 'Fn::GetAtt': ['GoneRole', 'Arn'] };
    fn.resource.Properties.Handler = { Ref: 'GoneHandler' };
    fn.resource.Properties.Description = {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Fn::Sub's own syntax.
      'Fn::Sub': '${GoneTable.Arn} in ${AWS::Region}',
    };

    expect(check(template).map((f) => [f.code, f.path.split('/').at(-2)])).toEqual([
      ['E1012', 'Handler'],
      ['E1010', 'Role'],
      ['E1010', 'Description'],
    ]);
  });

  it('refuses a value of the wrong primitive type', () => {
    const fn = first(fresh(), 'AWS::Lambda::Function');
    fn.resource.Properties.MemorySize = 'lots';
    fn.resource.Properties.Architectures = 'arm64';
    fn.resource.Properties.Environment = { Variables: ['A=1'] };
    fn.resource.Properties.Timeout = 1.5;

    expect(check(template).map((f) => [f.code, f.path.split('/').slice(3).join('/')])).toEqual([
      ['E3012', 'Architectures'],
      ['E3012', 'Environment/Variables'],
      ['E3012', 'MemorySize'],
      ['E3012', 'Timeout'],
    ]);
  });

  it('refuses an intrinsic function that gives a list where a string is expected', () => {
    const fn = first(fresh(), 'AWS::Lambda::Function');
    fn.resource.Properties.Handler = { 'Fn::Split': [',', 'a,b'] };

    expect(check(template).map((f) => f.code)).toEqual(['E3012']);
  });

  it('accepts what CloudFormation converts, conditional values and the string form of GetAtt', () => {
    const fn = first(fresh(), 'AWS::Lambda::Function');
    const role = fn.resource.Properties.Role['Fn::GetAtt'];
    (template as Record<string, unknown>).Conditions = {
      Big: { 'Fn::Equals': [{ Ref: 'AWS::Region' }, 'eu-west-1'] },
    };
    fn.resource.Properties.MemorySize = '256';
    fn.resource.Properties.Role = { 'Fn::GetAtt': `${role[0]}.${role[1]}` };
    fn.resource.Properties.ReservedConcurrentExecutions = {
      'Fn::If': ['Big', 10, { Ref: 'AWS::NoValue' }],
    };

    expect(check(template)).toEqual([]);
  });

  it('refuses a value outside the allowed ones', () => {
    const fn = first(fresh(), 'AWS::Lambda::Function');
    fn.resource.Properties.PackageType = 'Jar';

    expect(check(template)).toEqual([
      expect.objectContaining({ code: 'E3030', message: "'Jar' is not one of Image, Zip" }),
    ]);
  });

  it('refuses a resource type that does not exist', () => {
    const table = first(fresh(), 'AWS::DynamoDB::Table');
    table.resource.Type = 'AWS::DynamoDB::Tables';

    expect(check(template)).toContainEqual({
      code: 'E3006',
      path: `Resources/${table.id}/Type`,
      message: "resource type 'AWS::DynamoDB::Tables' does not exist",
    });
  });

  it('refuses a DependsOn on a resource the template does not have, and a missing condition', () => {
    const fn = first(fresh(), 'AWS::Lambda::Function');
    fn.resource.DependsOn = [...fn.resource.DependsOn, 'GonePolicy'];
    fn.resource.Condition = 'GoneCondition';

    expect(check(template).map((f) => f.code)).toEqual(['E8002', 'E3005']);
  });

  it('refuses resources that depend on each other in a circle', () => {
    const fn = first(fresh(), 'AWS::Lambda::Function');
    const [policy] = fn.resource.DependsOn as string[];
    template.Resources[policy as string] = {
      ...(template.Resources[policy as string] as Template['Resources'][string]),
      DependsOn: fn.id,
    };

    expect(check(template)).toEqual([
      expect.objectContaining({ code: 'E3004', message: expect.stringContaining(fn.id) }),
    ]);
  });
});
