/**
 * An offline stand-in for cfn-lint's errors on a synthesized template, checked against the
 * CloudFormation resource specification (cfn-spec.ts): resource types exist, required properties are present, unknown properties are absent, values
 * have the specified shape (string, number, boolean, list, map, object) and one of the allowed
 * values, `Ref`, `Fn::GetAtt`, `Fn::Sub`, `DependsOn` and conditions name something the
 * template defines, GetAtt attributes exist for the target's type, and resources do not depend
 * on each other in a circle. Finding codes follow cfn-lint's rule numbers where one matches.
 *
 * Like cfn-lint by default (not strict), a scalar CloudFormation converts is accepted: `"5"`
 * for a number, `"true"` for a boolean, a number for a string. Not checked: whether a type is
 * offered in a region (the specification's region data covers three regions, partly), string
 * patterns and lengths, and the service-specific rules cfn-lint adds on top of the schemas.
 */
import type { CfnSpec, SpecProperty, SpecResource, SpecType } from './cfn-spec.ts';

export interface Finding {
  code: string;
  /** Where, as cfn-lint prints it: `Resources/Fn/Properties/Runtime`. */
  path: string;
  message: string;
}

type Json = unknown;
type JsonObject = Record<string, Json>;
/** What an intrinsic function evaluates to, as far as a template check can know. */
type Kind = 'scalar' | 'list' | 'object' | 'any';

const PSEUDO_PARAMETERS: Record<string, Kind> = {
  'AWS::AccountId': 'scalar',
  'AWS::NotificationARNs': 'list',
  'AWS::NoValue': 'any',
  'AWS::Partition': 'scalar',
  'AWS::Region': 'scalar',
  'AWS::StackId': 'scalar',
  'AWS::StackName': 'scalar',
  'AWS::URLSuffix': 'scalar',
};

const RESOURCE_KEYS = new Set([
  'Type',
  'Properties',
  'DependsOn',
  'Condition',
  'Metadata',
  'DeletionPolicy',
  'UpdateReplacePolicy',
  'UpdatePolicy',
  'CreationPolicy',
]);
const DELETION_POLICIES = ['Delete', 'Retain', 'RetainExceptOnCreate', 'Snapshot'];
const TEMPLATE_KEYS = new Set([
  'AWSTemplateFormatVersion',
  'Description',
  'Metadata',
  'Parameters',
  'Rules',
  'Mappings',
  'Conditions',
  'Transform',
  'Resources',
  'Outputs',
]);
/** Functions only the Rules section may use. */
const RULE_FUNCTIONS = new Set([
  'Fn::Contains',
  'Fn::EachMemberEquals',
  'Fn::EachMemberIn',
  'Fn::RefAll',
  'Fn::ValueOf',
  'Fn::ValueOfAll',
]);
const CONDITION_FUNCTIONS = new Set(['Fn::And', 'Fn::Equals', 'Fn::Not', 'Fn::Or']);

export function checkTemplate(template: JsonObject, spec: CfnSpec): Finding[] {
  return new TemplateCheck(template, spec).run();
}

class TemplateCheck {
  readonly #findings: Finding[] = [];
  readonly #resources: Record<string, JsonObject>;
  readonly #parameters: JsonObject;
  readonly #conditions: JsonObject;
  readonly #mappings: JsonObject;
  /** Resource -> the resources it needs first (Ref, GetAtt, Sub, DependsOn). */
  readonly #edges = new Map<string, Set<string>>();

  readonly template: JsonObject;
  readonly spec: CfnSpec;

  constructor(template: JsonObject, spec: CfnSpec) {
    this.template = template;
    this.spec = spec;
    this.#resources = (isObject(template.Resources) ? template.Resources : {}) as Record<
      string,
      JsonObject
    >;
    this.#parameters = isObject(template.Parameters) ? template.Parameters : {};
    this.#conditions = isObject(template.Conditions) ? template.Conditions : {};
    this.#mappings = isObject(template.Mappings) ? template.Mappings : {};
  }

  run(): Finding[] {
    for (const key of Object.keys(this.template)) {
      if (!TEMPLATE_KEYS.has(key)) this.#add('E1001', key, `unknown top-level section '${key}'`);
    }
    if (!isObject(this.template.Resources) || Object.keys(this.#resources).length === 0) {
      this.#add('E1001', 'Resources', 'a template needs at least one resource');
    }
    for (const [name, condition] of Object.entries(this.#conditions)) {
      this.#walk(condition, `Conditions/${name}`, { from: undefined, conditions: true });
    }
    for (const [name, rule] of Object.entries(
      isObject(this.template.Rules) ? this.template.Rules : {},
    )) {
      this.#walk(rule, `Rules/${name}`, { from: undefined, conditions: true, rules: true });
    }
    for (const [name, resource] of Object.entries(this.#resources)) {
      this.#checkResource(name, resource);
    }
    for (const [name, output] of Object.entries(
      isObject(this.template.Outputs) ? this.template.Outputs : {},
    )) {
      const path = `Outputs/${name}`;
      if (!isObject(output) || !('Value' in output)) {
        this.#add('E6002', path, 'an output needs a Value');
        continue;
      }
      this.#checkConditionName(output.Condition, `${path}/Condition`);
      this.#walk(output.Value, `${path}/Value`, { from: undefined });
      if (output.Export !== undefined)
        this.#walk(output.Export, `${path}/Export`, { from: undefined });
    }
    this.#checkCycles();
    return this.#findings;
  }

  #add(code: string, path: string, message: string): void {
    this.#findings.push({ code, path, message });
  }

  #checkResource(name: string, resource: Json): void {
    const path = `Resources/${name}`;
    if (!isObject(resource)) {
      this.#add('E3001', path, 'a resource must be an object');
      return;
    }
    this.#edges.set(name, new Set());
    for (const key of Object.keys(resource)) {
      if (!RESOURCE_KEYS.has(key))
        this.#add('E3001', `${path}/${key}`, `unknown resource attribute '${key}'`);
    }
    for (const policy of ['DeletionPolicy', 'UpdateReplacePolicy'] as const) {
      const value = resource[policy];
      if (value !== undefined && !DELETION_POLICIES.includes(value as string)) {
        this.#add(
          'E3035',
          `${path}/${policy}`,
          `${policy} '${String(value)}' is not one of ${DELETION_POLICIES.join(', ')}`,
        );
      }
    }
    this.#checkConditionName(resource.Condition, `${path}/Condition`);
    this.#checkDependsOn(name, resource.DependsOn, `${path}/DependsOn`);

    const type = resource.Type;
    if (typeof type !== 'string') {
      this.#add('E3001', `${path}/Type`, 'a resource needs a Type');
      return;
    }
    const properties = resource.Properties ?? {};
    const propertiesPath = `${path}/Properties`;
    if (!isObject(properties)) {
      this.#add('E3012', propertiesPath, 'Properties must be an object');
      return;
    }
    const context: WalkContext = { from: name };
    if (isCustomResource(type)) {
      if (type === 'AWS::CloudFormation::CustomResource' || type.startsWith('Custom::')) {
        if (properties.ServiceToken === undefined)
          this.#add('E3003', propertiesPath, `'ServiceToken' is a required property of ${type}`);
      }
      this.#walk(properties, propertiesPath, context);
      return;
    }
    const definition = this.spec.resource(type);
    if (!definition) {
      this.#add('E3006', `${path}/Type`, `resource type '${type}' does not exist`);
      return;
    }
    this.#checkStruct(properties, definition.properties, propertiesPath, type, context);
  }

  #checkDependsOn(name: string, dependsOn: Json, path: string): void {
    if (dependsOn === undefined) return;
    const targets = Array.isArray(dependsOn) ? dependsOn : [dependsOn];
    targets.forEach((target, i) => {
      const at = Array.isArray(dependsOn) ? `${path}/${i}` : path;
      if (typeof target !== 'string') {
        this.#add('E3005', at, 'DependsOn names resources by logical ID (strings)');
      } else if (!(target in this.#resources)) {
        this.#add('E3005', at, `DependsOn '${target}' is not a resource of this template`);
      } else if (target === name) {
        this.#add('E3005', at, `resource '${name}' depends on itself`);
      } else {
        this.#edges.get(name)?.add(target);
      }
    });
  }

  #checkConditionName(condition: Json, path: string): void {
    if (condition === undefined) return;
    if (typeof condition !== 'string' || !(condition in this.#conditions)) {
      this.#add('E8002', path, `condition '${String(condition)}' is not defined in Conditions`);
    }
  }

  /** An object of named properties (a resource's Properties or a property type). */
  #checkStruct(
    value: JsonObject,
    properties: Record<string, SpecProperty>,
    path: string,
    typeName: string,
    context: WalkContext,
  ): void {
    for (const [key, property] of Object.entries(properties)) {
      if (property.required && (value[key] === undefined || isNoValue(value[key]))) {
        this.#add('E3003', path, `'${key}' is a required property of ${typeName}`);
      }
    }
    for (const [key, item] of Object.entries(value)) {
      const property = properties[key];
      if (!property) {
        this.#add('E3002', `${path}/${key}`, `'${key}' is not a property of ${typeName}`);
        this.#walk(item, `${path}/${key}`, context);
        continue;
      }
      this.#checkAlternatives(
        item,
        [property.type, ...(property.previousTypes ?? [])],
        `${path}/${key}`,
        context,
      );
    }
  }

  /** A value that may take any of several shapes: it must fit one; the closest one is reported. */
  #checkAlternatives(value: Json, types: SpecType[], path: string, context: WalkContext): void {
    let best: Finding[] | undefined;
    for (const type of types) {
      const findings = this.#collect(() => this.#checkValue(value, type, path, context));
      if (findings.length === 0) return;
      if (!best || findings.length < best.length) best = findings;
    }
    this.#findings.push(...(best ?? []));
  }

  #collect(check: () => void): Finding[] {
    const before = this.#findings.length;
    check();
    return this.#findings.splice(before);
  }

  #checkValue(value: Json, type: SpecType, path: string, context: WalkContext): void {
    if (type.type === 'union') {
      this.#checkAlternatives(value, type.types, path, context);
      return;
    }
    const intrinsic = intrinsicName(value);
    if (intrinsic === 'Fn::If') {
      const args = (value as JsonObject)[intrinsic];
      if (!Array.isArray(args) || args.length !== 3) {
        this.#add('E1028', path, 'Fn::If takes [condition, value if true, value if false]');
        return;
      }
      this.#checkConditionName(args[0], `${path}/Fn::If/0`);
      for (const i of [1, 2]) {
        if (!isNoValue(args[i])) this.#checkValue(args[i], type, `${path}/Fn::If/${i}`, context);
      }
      return;
    }
    if (intrinsic) {
      const kind = this.#walk(value, path, context);
      const expected = expectedKind(type);
      if (kind !== 'any' && expected !== 'any' && kind !== expected) {
        this.#add(
          'E3012',
          path,
          `${intrinsic} gives a ${kind} where ${describe(type)} is expected`,
        );
      }
      return;
    }
    switch (type.type) {
      case 'string':
      case 'date-time':
        if (!isScalar(value)) {
          this.#wrongType(value, type, path);
          return;
        }
        if (type.type === 'string' && type.allowedValues && typeof value === 'string') {
          if (!type.allowedValues.includes(value))
            this.#add('E3030', path, `'${value}' is not one of ${type.allowedValues.join(', ')}`);
        }
        return;
      case 'number':
      case 'integer': {
        const number =
          typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
        if (typeof number !== 'number' || (type.type === 'integer' && !Number.isInteger(number)))
          this.#wrongType(value, type, path);
        return;
      }
      case 'boolean':
        if (typeof value !== 'boolean' && value !== 'true' && value !== 'false')
          this.#wrongType(value, type, path);
        return;
      case 'null':
        if (value !== null) this.#wrongType(value, type, path);
        return;
      case 'json':
        if (!isObject(value) && !Array.isArray(value)) {
          this.#wrongType(value, type, path);
          return;
        }
        this.#walk(value, path, context);
        return;
      case 'array':
        if (!Array.isArray(value)) {
          this.#wrongType(value, type, path);
          return;
        }
        value.forEach((item, i) => {
          if (!isNoValue(item)) this.#checkValue(item, type.element, `${path}/${i}`, context);
        });
        return;
      case 'map':
        if (!isObject(value)) {
          this.#wrongType(value, type, path);
          return;
        }
        for (const [key, item] of Object.entries(value))
          this.#checkValue(item, type.element, `${path}/${key}`, context);
        return;
      case 'tag':
        if (!isObject(value)) {
          this.#wrongType(value, type, path);
          return;
        }
        this.#checkStruct(value, TAG, path, 'Tag', context);
        return;
      case 'ref': {
        const definition = this.spec.typeDefinition(type.reference.$ref);
        if (!isObject(value)) {
          this.#wrongType(value, type, path);
          return;
        }
        if (!definition) {
          this.#walk(value, path, context);
          return;
        }
        this.#checkStruct(value, definition.properties, path, definition.name, context);
        return;
      }
    }
  }

  #wrongType(value: Json, type: SpecType, path: string): void {
    this.#add('E3012', path, `${describeValue(value)} where ${describe(type)} is expected`);
  }

  /**
   * Checks every intrinsic function inside a value (names, arguments, what they refer to) and
   * says what the value evaluates to when it is one.
   */
  #walk(value: Json, path: string, context: WalkContext): Kind {
    if (Array.isArray(value)) {
      value.forEach((item, i) => {
        this.#walk(item, `${path}/${i}`, context);
      });
      return 'list';
    }
    if (!isObject(value)) return 'scalar';
    const name = intrinsicName(value, context);
    if (!name) {
      const [only, ...more] = Object.keys(value);
      if (only?.startsWith('Fn::') && more.length === 0) {
        this.#add(
          'E1001',
          `${path}/${only}`,
          `'${only}' is not an intrinsic function allowed here`,
        );
      }
      for (const [key, item] of Object.entries(value)) this.#walk(item, `${path}/${key}`, context);
      return 'object';
    }
    const args = value[name];
    const at = `${path}/${name}`;
    switch (name) {
      case 'Ref':
        return this.#ref(args, at, context);
      case 'Fn::GetAtt':
        return this.#getAtt(args, at, context);
      case 'Fn::Sub':
        this.#sub(args, at, context);
        return 'scalar';
      case 'Condition':
        this.#checkConditionName(args, at);
        return 'scalar';
      case 'Fn::If':
        if (Array.isArray(args) && args.length === 3) {
          this.#checkConditionName(args[0], `${at}/0`);
          const kinds = [1, 2].map((i) => this.#walk(args[i], `${at}/${i}`, context));
          return kinds[0] === kinds[1] ? (kinds[0] ?? 'any') : 'any';
        }
        this.#add('E1028', at, 'Fn::If takes [condition, value if true, value if false]');
        return 'any';
      case 'Fn::FindInMap':
        if (Array.isArray(args) && typeof args[0] === 'string' && !(args[0] in this.#mappings))
          this.#add('E1011', `${at}/0`, `mapping '${args[0]}' is not defined in Mappings`);
        this.#walk(args, at, context);
        return 'any';
      default:
        this.#walk(args, at, context);
        return INTRINSIC_KINDS[name] ?? 'any';
    }
  }

  #ref(target: Json, path: string, context: WalkContext): Kind {
    if (typeof target !== 'string') {
      this.#add('E1012', path, 'Ref takes a logical ID or parameter name');
      return 'any';
    }
    const pseudo = PSEUDO_PARAMETERS[target];
    if (pseudo) return pseudo;
    const parameter = this.#parameters[target];
    if (isObject(parameter)) {
      return /List/.test(String(parameter.Type)) ? 'list' : 'scalar';
    }
    if (target in this.#resources && !context.conditions) {
      this.#dependsOn(context, target);
      return 'scalar';
    }
    this.#add(
      'E1012',
      path,
      `Ref '${target}' is not a ${context.conditions ? 'parameter' : 'resource or parameter'} of this template`,
    );
    return 'any';
  }

  #getAtt(args: Json, path: string, context: WalkContext): Kind {
    let target: Json;
    let attribute: Json;
    if (typeof args === 'string') {
      const dot = args.indexOf('.');
      [target, attribute] = dot < 0 ? [args, undefined] : [args.slice(0, dot), args.slice(dot + 1)];
    } else if (Array.isArray(args) && args.length === 2) {
      [target, attribute] = args;
    }
    if (typeof target !== 'string' || attribute === undefined) {
      this.#add('E1010', path, 'Fn::GetAtt takes [logical ID, attribute name]');
      return 'any';
    }
    const resource = this.#resources[target];
    if (!isObject(resource) || context.conditions) {
      this.#add('E1010', path, `Fn::GetAtt target '${target}' is not a resource of this template`);
      return 'any';
    }
    this.#dependsOn(context, target);
    if (typeof attribute !== 'string') {
      this.#walk(attribute, `${path}/1`, context);
      return 'any';
    }
    return this.#attributeKind(resource, target, attribute, path);
  }

  #attributeKind(resource: JsonObject, target: string, attribute: string, path: string): Kind {
    const type = String(resource.Type);
    if (isCustomResource(type)) return 'any';
    if (type === 'AWS::CloudFormation::Stack' && attribute.startsWith('Outputs.')) return 'any';
    const definition: SpecResource | undefined = this.spec.resource(type);
    if (!definition) return 'any'; // reported with the resource
    const found = definition.attributes[attribute];
    if (!found) {
      const known = Object.keys(definition.attributes).join(', ') || 'none';
      this.#add(
        'E1010',
        path,
        `${type} '${target}' has no attribute '${attribute}' (it has: ${known})`,
      );
      return 'any';
    }
    return found.type.type === 'array' ? 'list' : 'scalar';
  }

  #sub(args: Json, path: string, context: WalkContext): void {
    let text: Json = args;
    let variables: JsonObject = {};
    if (Array.isArray(args)) {
      [text] = args;
      if (args.length !== 2 || !isObject(args[1])) {
        this.#add('E1019', path, 'Fn::Sub takes a string or [string, {variables}]');
      } else {
        variables = args[1];
        this.#walk(variables, `${path}/1`, context);
      }
    }
    if (typeof text !== 'string') {
      this.#add('E1019', path, 'Fn::Sub needs a string to substitute into');
      return;
    }
    for (const match of text.matchAll(/\$\{([^}!][^}]*)\}/g)) {
      const reference = (match[1] ?? '').trim();
      if (reference in variables || reference in PSEUDO_PARAMETERS) continue;
      const dot = reference.indexOf('.');
      if (dot < 0) {
        if (reference in this.#parameters) continue;
        if (reference in this.#resources) {
          this.#dependsOn(context, reference);
          continue;
        }
        this.#add(
          'E1019',
          path,
          `\${${reference}} is not a variable, parameter or resource of this template`,
        );
        continue;
      }
      this.#getAtt([reference.slice(0, dot), reference.slice(dot + 1)], path, context);
    }
  }

  #dependsOn(context: WalkContext, target: string): void {
    if (context.from !== undefined) this.#edges.get(context.from)?.add(target);
  }

  /** CloudFormation refuses a template whose resources wait for each other in a circle. */
  #checkCycles(): void {
    const state = new Map<string, 'visiting' | 'done'>();
    const stack: string[] = [];
    const visit = (name: string): void => {
      state.set(name, 'visiting');
      stack.push(name);
      for (const next of this.#edges.get(name) ?? []) {
        if (state.get(next) === 'visiting') {
          const cycle = [...stack.slice(stack.indexOf(next)), next];
          this.#add('E3004', `Resources/${next}`, `circular dependency: ${cycle.join(' -> ')}`);
        } else if (!state.has(next)) {
          visit(next);
        }
      }
      stack.pop();
      state.set(name, 'done');
    };
    for (const name of this.#edges.keys()) if (!state.has(name)) visit(name);
  }
}

interface WalkContext {
  /** The resource whose value this is: references from it are dependencies. */
  from: string | undefined;
  /** Conditions and Rules may refer to parameters only. */
  conditions?: boolean;
  rules?: boolean;
}

const TAG: Record<string, SpecProperty> = {
  Key: { type: { type: 'string' }, required: true },
  Value: { type: { type: 'string' }, required: true },
};

const INTRINSIC_KINDS: Record<string, Kind> = {
  'Fn::Base64': 'scalar',
  'Fn::Cidr': 'list',
  'Fn::GetAZs': 'list',
  'Fn::ImportValue': 'any',
  'Fn::Join': 'scalar',
  'Fn::Length': 'scalar',
  'Fn::Select': 'any',
  'Fn::Split': 'list',
  'Fn::ToJsonString': 'scalar',
  'Fn::And': 'scalar',
  'Fn::Equals': 'scalar',
  'Fn::Not': 'scalar',
  'Fn::Or': 'scalar',
};

function intrinsicName(value: Json, context?: WalkContext): string | undefined {
  if (!isObject(value)) return undefined;
  const keys = Object.keys(value);
  if (keys.length !== 1) return undefined;
  const [key] = keys as [string];
  if (key === 'Ref' || key in INTRINSIC_KINDS) return key;
  if (['Fn::GetAtt', 'Fn::Sub', 'Fn::If', 'Fn::FindInMap'].includes(key)) return key;
  if (context?.conditions && (key === 'Condition' || CONDITION_FUNCTIONS.has(key))) return key;
  if (context?.rules && RULE_FUNCTIONS.has(key)) return key;
  return undefined;
}

function isNoValue(value: Json): boolean {
  return isObject(value) && value.Ref === 'AWS::NoValue' && Object.keys(value).length === 1;
}

function isCustomResource(type: string): boolean {
  // AWS::CDK::Metadata is CDK's version report; CloudFormation accepts it without a schema.
  return (
    type.startsWith('Custom::') ||
    type === 'AWS::CloudFormation::CustomResource' ||
    type === 'AWS::CDK::Metadata'
  );
}

function isObject(value: Json): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isScalar(value: Json): boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

function expectedKind(type: SpecType): Kind {
  switch (type.type) {
    case 'array':
      return 'list';
    case 'map':
    case 'tag':
    case 'ref':
      return 'object';
    case 'json':
    case 'union':
      return 'any';
    default:
      return 'scalar';
  }
}

function describe(type: SpecType): string {
  switch (type.type) {
    case 'array':
      return `a list of ${describe(type.element)}`;
    case 'map':
      return `a map of ${describe(type.element)}`;
    case 'ref':
      return 'an object';
    case 'union':
      return type.types.map(describe).join(' or ');
    case 'json':
      return 'a JSON object';
    default:
      return `a ${type.type}`;
  }
}

function describeValue(value: Json): string {
  if (Array.isArray(value)) return 'a list';
  if (value === null) return 'null';
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${JSON.stringify(value)}`;
}
