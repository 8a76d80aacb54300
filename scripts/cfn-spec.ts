/**
 * The CloudFormation resource specification, offline: the `@aws-cdk/aws-service-spec` database
 * the pinned aws-cdk CLI ships for `cdk diff` (node_modules/aws-cdk/db.json.gz). It is built
 * from the CloudFormation registry schemas, the same source cfn-lint's schemas come from, so
 * the template check needs no network and no Python.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';

export type SpecType =
  | {
      type: 'string' | 'number' | 'integer' | 'boolean' | 'json' | 'date-time' | 'tag' | 'null';
      allowedValues?: string[];
    }
  | { type: 'array' | 'map'; element: SpecType }
  | { type: 'ref'; reference: { $ref: string } }
  | { type: 'union'; types: SpecType[] };

export interface SpecProperty {
  type: SpecType;
  required?: boolean;
  /** Shapes the property had before: CloudFormation still accepts them. */
  previousTypes?: SpecType[];
}

export interface SpecResource {
  cloudFormationType: string;
  properties: Record<string, SpecProperty>;
  attributes: Record<string, { type: SpecType }>;
}

export interface SpecTypeDefinition {
  name: string;
  properties: Record<string, SpecProperty>;
}

export interface CfnSpec {
  /** Where the specification came from, for the report: CLI version and build date. */
  readonly source: string;
  resource(type: string): SpecResource | undefined;
  typeDefinition(id: string): SpecTypeDefinition | undefined;
}

interface Entity {
  $id: string;
}

interface Database {
  schema: {
    resource: { entities: (Entity & SpecResource)[] };
    typeDefinition: { entities: (Entity & SpecTypeDefinition)[] };
  };
}

let cached: CfnSpec | undefined;

/** Loads the specification once per process (2.7 MB gzip, about a second). */
export function loadCfnSpec(): CfnSpec {
  cached ??= readSpec();
  return cached;
}

function readSpec(): CfnSpec {
  const require = createRequire(import.meta.url);
  const cliDir = dirname(require.resolve('aws-cdk/package.json'));
  const cli = JSON.parse(readFileSync(join(cliDir, 'package.json'), 'utf8')) as { version: string };
  const build = JSON.parse(readFileSync(join(cliDir, 'build-info.json'), 'utf8')) as {
    comment?: string;
  };
  const db = JSON.parse(
    gunzipSync(readFileSync(join(cliDir, 'db.json.gz'))).toString('utf8'),
  ) as Database;
  const { schema } = db;

  const resources = new Map(schema.resource.entities.map((r) => [r.cloudFormationType, r]));
  const typeDefinitions = new Map(schema.typeDefinition.entities.map((t) => [t.$id, t]));
  const built = build.comment?.match(/\d{4}-\d{2}-\d{2}/)?.[0] ?? 'unknown date';
  return {
    source: `aws-cdk ${cli.version} db.json.gz (${resources.size} resource types, built ${built})`,
    resource: (type) => resources.get(type),
    typeDefinition: (id) => typeDefinitions.get(id),
  };
}
