import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as z from 'zod';
import { DEFAULTS, ENV } from '../lib/config.ts';

/**
 * Which registry the CLI talks to. In order: the flags, the environment the Lambda functions
 * read (REGISTRAR_TABLE, REGISTRAR_DYNAMODB_ENDPOINT, AWS_REGION), then the file the local
 * runtime (`npm start`) writes, so that on a laptop `registrar get we` needs no flags.
 */

/** Written by the local runtime, relative to the directory it was started in. */
export const LOCAL_FILE = '.registrar/local.json';

export interface TargetFlags {
  endpoint?: string;
  table?: string;
  region?: string;
}

export interface Target {
  tableName: string;
  /** Set for a local store (dynalite, DynamoDB Local); unset means AWS with normal credentials. */
  endpoint?: string;
  region: string;
  /** Where the table name came from, for error messages. */
  source: string;
}

export class TargetError extends Error {}

const localFileSchema = z.object({
  dynamoDbEndpoint: z.url(),
  tableName: z.string().min(1),
  region: z.string().min(1).optional(),
  url: z.string().optional(),
  managementUrl: z.string().optional(),
});

export async function resolveTarget(
  flags: TargetFlags,
  env: Record<string, string | undefined>,
  cwd: string,
): Promise<Target> {
  const endpoint = nonEmpty(flags.endpoint) ?? nonEmpty(env[ENV.dynamoDbEndpoint]);
  if (endpoint !== undefined && !z.url().safeParse(endpoint).success) {
    throw new TargetError(
      `invalid DynamoDB endpoint '${endpoint}': must be a URL such as http://localhost:8000`,
    );
  }
  const region =
    nonEmpty(flags.region) ?? nonEmpty(env[ENV.region]) ?? nonEmpty(env.AWS_DEFAULT_REGION);
  const table = nonEmpty(flags.table) ?? nonEmpty(env[ENV.tableName]);
  if (table !== undefined) {
    // A named table is the operator's choice: the local file's dynalite endpoint must not
    // leak into it, or `--table prod` would quietly talk to a laptop.
    const source = flags.table ? '--table' : ENV.tableName;
    const target: Target = { tableName: table, region: region ?? DEFAULTS.region, source };
    if (endpoint !== undefined) target.endpoint = endpoint;
    return target;
  }
  const local = await readLocalFile(join(cwd, LOCAL_FILE));
  return {
    tableName: local.tableName,
    endpoint: endpoint ?? local.dynamoDbEndpoint,
    region: region ?? local.region ?? DEFAULTS.region,
    source: LOCAL_FILE,
  };
}

async function readLocalFile(path: string): Promise<z.infer<typeof localFileSchema>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    throw new TargetError(
      `no registry configured: ${path} does not exist and neither --table nor ${ENV.tableName} is set; ` +
        `start the local runtime with 'npm start' in this directory, or pass --table <name> ` +
        `(and --endpoint <url> for a local DynamoDB)`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new TargetError(
      `${path} is not JSON; restart 'npm start' to rewrite it, or pass --table <name>`,
    );
  }
  const parsed = localFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') || '(file)';
    throw new TargetError(
      `${path}: ${field}: ${issue?.message ?? 'invalid'}; restart 'npm start' to rewrite it, or pass --table <name>`,
    );
  }
  return parsed.data;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

/** One line for errors: which table, where. */
export function describeTarget(target: Target): string {
  const where = target.endpoint ? `at ${target.endpoint}` : `in AWS region ${target.region}`;
  return `table '${target.tableName}' ${where} (from ${target.source})`;
}
