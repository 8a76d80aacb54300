import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Command } from 'commander';
import type { HeldEntryReader } from '../../lib/auth/held-entry-reader.ts';
import type { TerminatedInstances } from '../../lib/auth/terminated-instance-store.ts';
import type { TokenStore } from '../../lib/auth/token-store.ts';
import type { RegistrarStore } from '../../lib/registrar-store.ts';
import type { CatalogStore } from '../../lib/registration/catalog-store.ts';
import type { CordonStore, EntryEventStore } from '../../lib/registration/entry-event-store.ts';
import type { HeartbeatCounts } from '../../lib/registration/heartbeat-quota.ts';
import type { NamespaceSettingsStore } from '../../lib/registration/namespace-settings-store.ts';
import type { NamespaceUsageReader } from '../../lib/registration/namespace-usage-reader.ts';
import type { Migration, SchemaStore } from '../../lib/registration/schema-store.ts';
import type { GroupSourceStore } from '../../lib/rollout/group-source-store.ts';
import type { RolloutStore } from '../../lib/rollout/rollout-store.ts';
import type { SweepPolicyStore } from '../../lib/sweep/sweep-policy-store.ts';
import { resolveTarget, type Target, type TargetFlags } from '../target.ts';

/** Where the CLI reads and writes; the process's own streams, or a test's. */
export interface CliIo {
  stdout: { write(chunk: string): unknown };
  stderr: { write(chunk: string): unknown };
  stdin: AsyncIterable<string | Uint8Array>;
  env: Record<string, string | undefined>;
  cwd: string;
  /** The clock for ages, token expiry and sweeps; tests pass a fixed one. */
  now?: () => number;
  /**
   * Stops a long-running command (`get --watch`), as Ctrl-C does; the abort reason may name
   * the signal ('SIGTERM'). Without it such a command listens for SIGINT and SIGTERM itself.
   */
  signal?: AbortSignal;
}

export interface Stores {
  catalog: CatalogStore;
  /** The registry's every port (lib/wiring/registry.ts): the sweep and its heartbeat checks too. */
  registry: RegistrarStore;
  tokens: TokenStore;
  /** The sweep policy the registrar recorded (its deployed or running configuration). */
  sweepPolicy: Pick<SweepPolicyStore, 'read'>;
  /** Template rollouts (`registrar rollout`, `get wg`'s UP-TO-DATE). */
  rollouts: RolloutStore;
  /** Where the registrar takes its groups from (apply and delete of a group refuse if the cluster). */
  groupSource: Pick<GroupSourceStore, 'read'>;
  /** Cordons and the entries' event history (deleted entries' too). */
  maintenance: CordonStore & EntryEventStore;
  /** What the operator allows each namespace, and how many of its entries are connected. */
  namespaceSettings: NamespaceSettingsStore;
  namespaceUsage: NamespaceUsageReader;
  /** Instances EC2 reported terminated (IAM mode refuses their connects for a day). */
  terminated: TerminatedInstances;
  /** A namespace's connected entries and who authenticated each holder (revocation). */
  heldEntries: HeldEntryReader;
  /** Heartbeat groups' held VMs (apply's quota check) and the settings they are on. */
  heartbeats: HeartbeatCounts;
}

export type CatalogLists = Pick<CatalogStore, 'listGroups' | 'listEntries'>;

export interface TableSchema {
  schema: SchemaStore;
  migrations: readonly Migration[];
}

/** What every command gets: its streams, the clock, and the registry on demand. */
export interface CliContext {
  io: CliIo;
  now(): number;
  out(text: string): void;
  /** Connects to the registry named by the global options; commands that need none never do. */
  stores(command: Command): Promise<Stores>;
  /**
   * Only the catalog's lists: `get` of a list loads the catalog's code alone, not the
   * registration store's writes and sweep queries (issue 17: the CLI's start-up).
   */
  catalogLists(command: Command): Promise<CatalogLists>;
  /** The table's schema record and this release's migrations (`registrar migrate`). */
  tableSchema(command: Command): Promise<TableSchema>;
  /** The registry connected to, once `stores` was called: error messages name it. */
  target(): Target | undefined;
  close(): void;
}

/** A command line that cannot mean anything: exit code 2, like commander's own refusals. */
export class UsageError extends Error {}

/**
 * The command failed and has already said why on stderr (one line per object, as kubectl
 * does when some of the objects it was asked for are missing): exit code 1, nothing more.
 */
export class ReportedFailure extends Error {}

/**
 * Ends the command with this exit status (`diff`: 1 when there are differences, as kubectl);
 * `cause`, when set, is reported as any other error would be.
 */
export class ExitStatus extends Error {
  readonly exitCode: number;
  constructor(exitCode: number, options?: { cause?: unknown }) {
    super(`exit status ${exitCode}`, options);
    this.exitCode = exitCode;
  }
}

/** Adds one command (or command group) to the program; see `index.ts`. */
export type CommandRegistration = (program: Command, context: CliContext) => void;

export function createContext(io: CliIo): CliContext {
  let target: Target | undefined;
  let connected: Promise<Connection> | undefined;
  let opened: Promise<Stores> | undefined;
  const connect = (command: Command) => {
    connected ??= resolveTarget(command.optsWithGlobals<TargetFlags>(), io.env, io.cwd).then(
      (resolved) => {
        target = resolved;
        return openConnection(resolved);
      },
    );
    return connected;
  };
  return {
    io,
    now: io.now ?? Date.now,
    out: (text) => {
      io.stdout.write(text);
    },
    async stores(command) {
      opened ??= connect(command).then(openStores);
      return await opened;
    },
    async catalogLists(command) {
      if (opened) return (await opened).catalog;
      const [{ client, tableName }, { DynamoDbCatalog }] = await Promise.all([
        connect(command),
        import('../../lib/store/dynamodb-catalog.ts'),
      ]);
      return new DynamoDbCatalog(client, tableName);
    },
    async tableSchema(command) {
      const [{ client, tableName }, { DynamoDbSchemaStore }, { registryMigrations }] =
        await Promise.all([
          connect(command),
          import('../../lib/store/dynamodb-schema-store.ts'),
          import('../../lib/store/dynamodb-migrations.ts'),
        ]);
      return {
        schema: new DynamoDbSchemaStore(client, tableName),
        migrations: registryMigrations(client, tableName),
      };
    },
    target: () => target,
    close: () => {
      void connected?.then((c) => c.client.destroy()).catch(() => undefined);
    },
  };
}

/** The document client for the target's table. */
interface Connection {
  client: DynamoDBDocumentClient;
  tableName: string;
}

/**
 * Loaded on first use: the AWS SDK takes a while to import, and `--help` or a usage error
 * should not wait for it.
 */
async function openConnection(target: Target): Promise<Connection> {
  const { createDocumentClient } = await import('../../lib/store/dynamodb-client.ts');
  const options = target.endpoint
    ? { region: target.region, endpoint: target.endpoint }
    : { region: target.region };
  return { client: createDocumentClient(options), tableName: target.tableName };
}

async function openStores({ client, tableName }: Connection): Promise<Stores> {
  const [
    { composeRegistry },
    { DynamoDbTokenStore },
    { DynamoDbSweepPolicyStore },
    { composeRollouts },
    { DynamoDbGroupSource },
    { DynamoDbNamespaceSettings },
    { DynamoDbNamespaceUsage },
    { DynamoDbTerminatedInstances },
    { RegistryTable },
    { DynamoDbHeldEntries },
    { DynamoDbHeartbeatGroups },
  ] = await Promise.all([
    import('../../lib/wiring/registry.ts'),
    import('../../lib/store/dynamodb-token-store.ts'),
    import('../../lib/store/dynamodb-sweep-policy-store.ts'),
    import('../../lib/wiring/rollouts.ts'),
    import('../../lib/store/dynamodb-group-source.ts'),
    import('../../lib/store/dynamodb-namespace-settings.ts'),
    import('../../lib/store/dynamodb-namespace-usage.ts'),
    import('../../lib/store/dynamodb-terminated-instances.ts'),
    import('../../lib/store/dynamodb-table.ts'),
    import('../../lib/store/dynamodb-held-entries.ts'),
    import('../../lib/store/dynamodb-heartbeat-groups.ts'),
  ]);
  const table = new RegistryTable(client, tableName);
  const registry = composeRegistry(client, tableName);
  return {
    catalog: registry,
    registry,
    tokens: new DynamoDbTokenStore(client, tableName),
    sweepPolicy: new DynamoDbSweepPolicyStore(client, tableName),
    rollouts: composeRollouts(client, tableName),
    groupSource: new DynamoDbGroupSource(client, tableName),
    maintenance: registry,
    namespaceSettings: new DynamoDbNamespaceSettings(client, tableName),
    namespaceUsage: new DynamoDbNamespaceUsage(client, tableName),
    terminated: new DynamoDbTerminatedInstances(table),
    heldEntries: new DynamoDbHeldEntries(table),
    heartbeats: new DynamoDbHeartbeatGroups(table),
  };
}
