import { readFile, stat } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { DEFAULTS, ENV } from '../lib/config-env.ts';

/**
 * Which registry the CLI talks to. In order: the flags, the environment the Lambda functions
 * read (REGISTRAR_TABLE, REGISTRAR_DYNAMODB_ENDPOINT, AWS_REGION), then the file the local
 * runtime (`npm start`) writes, so that on a laptop `registrar get we` needs no flags.
 */

/** The local runtime's data directory, relative to the directory it was started in. */
export const LOCAL_DIR = '.registrar';
/** Written by the local runtime into its data directory while it runs. */
export const LOCAL_FILE = `${LOCAL_DIR}/local.json`;
/** The data directory of `npm start --data-dir`; the CLI reads the same variable. */
export const DATA_DIR_ENV = 'REGISTRAR_DATA_DIR';

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
  /** Whether it came from a local runtime's `local.json` (its endpoint stops with `npm start`). */
  local: boolean;
  /** The local runtime's `@connections` API, from its `local.json`. */
  managementUrl?: string;
}

export class TargetError extends Error {}

/** What `npm start` writes into local.json (see infra/local). */
interface LocalFile {
  dynamoDbEndpoint: string;
  tableName: string;
  region?: string | undefined;
  url?: string | undefined;
  managementUrl?: string | undefined;
}

/**
 * zod is imported when a target is resolved, not with this module: `registrar --help` names
 * the local file from here and should not wait ~40 ms for zod (issue 17).
 */
async function loadZod() {
  return await import('zod');
}

async function localFileSchema() {
  const z = await loadZod();
  return z.object({
    dynamoDbEndpoint: z.url(),
    tableName: z.string().min(1),
    region: z.string().min(1).optional(),
    url: z.string().optional(),
    managementUrl: z.string().optional(),
  });
}

export async function resolveTarget(
  flags: TargetFlags,
  env: Record<string, string | undefined>,
  cwd: string,
): Promise<Target> {
  const endpoint = nonEmpty(flags.endpoint) ?? nonEmpty(env[ENV.dynamoDbEndpoint]);
  if (endpoint !== undefined && !(await loadZod()).url().safeParse(endpoint).success) {
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
    const target: Target = {
      tableName: table,
      // A local DynamoDB (an endpoint) takes any region; AWS's is the profile's.
      region:
        region ?? (endpoint !== undefined ? DEFAULTS.region : await profileRegion(table, source)),
      source,
      local: false,
    };
    if (endpoint !== undefined) target.endpoint = endpoint;
    return target;
  }
  const path = await findLocalFile(env, cwd);
  const local = await readLocalFile(path, cwd);
  return {
    tableName: local.tableName,
    endpoint: endpoint ?? local.dynamoDbEndpoint,
    region: region ?? local.region ?? DEFAULTS.region,
    source: displayPath(path, cwd),
    local: true,
    ...(local.managementUrl ? { managementUrl: local.managementUrl } : {}),
  };
}

/**
 * The region of the AWS profile, as the AWS CLI, the SDK and `cdk` find it: `AWS_PROFILE`'s
 * (else the default profile's) `region` in `~/.aws/config` (`AWS_CONFIG_FILE`). The SDK's own
 * resolver does the reading, so the CLI never disagrees with it. None anywhere is an error,
 * as in the AWS CLI: guessing us-east-1 would send a command to a table in another Region.
 */
async function profileRegion(table: string, source: string): Promise<string> {
  const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
  try {
    return await new DynamoDBClient({}).config.region();
  } catch {
    throw new TargetError(
      `no AWS region for table '${table}' (from ${source}): pass --region <region>, set ${ENV.region}, ` +
        `or set 'region' in your AWS profile (aws configure set region <region>)`,
    );
  }
}

/**
 * `<REGISTRAR_DATA_DIR>/local.json` when the variable is set (relative to the current
 * directory, as `npm start` reads it); otherwise the nearest `.registrar/` in the current
 * directory or a parent, as git finds `.git`, so the CLI works from any subdirectory of the
 * checkout. The first `.registrar/` found is the one: a parent's is never used instead.
 */
async function findLocalFile(env: Record<string, string | undefined>, cwd: string) {
  const dataDir = nonEmpty(env[DATA_DIR_ENV]);
  if (dataDir !== undefined) return join(resolve(cwd, dataDir), 'local.json');
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    if (await isDirectory(join(dir, LOCAL_DIR))) return join(dir, LOCAL_FILE);
    if (dirname(dir) === dir) break;
  }
  throw new TargetError(
    `no registry configured: no ${LOCAL_FILE} in ${resolve(cwd)} or any parent directory, ` +
      `${DATA_DIR_ENV} is unset, and neither --table nor ${ENV.tableName} is set; ` +
      `start the local runtime with 'npm start' in your checkout, or pass --table <name> ` +
      `(and --endpoint <url> for a local DynamoDB)`,
  );
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

async function readLocalFile(path: string, cwd: string): Promise<LocalFile> {
  const shown = displayPath(path, cwd);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    throw new TargetError(
      `no local runtime is running: ${shown} does not exist ('npm start' writes it while it runs); ` +
        `start the local runtime, or pass --table <name> (and --endpoint <url> for a local DynamoDB)`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new TargetError(
      `${shown} is not JSON; restart 'npm start' to rewrite it, or pass --table <name>`,
    );
  }
  const parsed = (await localFileSchema()).safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') || '(file)';
    throw new TargetError(
      `${shown}: ${field}: ${issue?.message ?? 'invalid'}; restart 'npm start' to rewrite it, or pass --table <name>`,
    );
  }
  return parsed.data;
}

/** Relative to the current directory when it is inside it (`.registrar/local.json`), else absolute. */
function displayPath(path: string, cwd: string): string {
  const shown = relative(resolve(cwd), path);
  return shown.startsWith('..') ? path : shown;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

/** One line for errors: which table, where. */
export function describeTarget(target: Target): string {
  const where = target.endpoint ? `at ${target.endpoint}` : `in AWS region ${target.region}`;
  return `table '${target.tableName}' ${where} (from ${target.source})`;
}
