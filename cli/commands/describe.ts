import { type Command, Option } from 'commander';
import { formatDuration } from '../../lib/domain/duration.ts';
import { type EntryRecord, isAutoRegistered } from '../../lib/domain/entry-record.ts';
import { formatHeartbeat, heartbeatOf } from '../../lib/domain/heartbeat.ts';
import { censusOf, formatCensus, heldLines } from '../../lib/domain/heartbeat-census.ts';
import type { ObjectRef, StringMap, VerifiedIdentity } from '../../lib/domain/model.ts';
import type { StoredGroup } from '../../lib/domain/registry-records.ts';
import { eventsOf, formatEvents } from '../../lib/presentation/entry-events.ts';
import {
  formatAge,
  formatTable,
  formatTimestamp,
  parseTimestamp,
  toYaml,
} from '../../lib/presentation/output.ts';
import type { RecordedSweepPolicy } from '../../lib/sweep/sweep-policy-store.ts';
import {
  type LabelSelector,
  matchesSelector,
  parseLabelSelector,
  SELECTOR_HELP,
} from '../label-selector.ts';
import { parseResourceArgs } from '../resource-args.ts';
import { type CommandRegistration, ReportedFailure, type Stores, UsageError } from './context.ts';
import {
  agentVersionCell,
  connectedStatus,
  namespaceOf,
  namespaceOption,
  notFound,
  RESOURCE_HELP,
  type ResourceKind,
  renderEntry,
  renderGroup,
} from './resources.ts';

export const registerDescribe: CommandRegistration = (program, context) => {
  program
    .command('describe')
    .description(`show ${RESOURCE_HELP} in detail`)
    .argument('<resource>', `TYPE or TYPE/NAME; types: ${RESOURCE_HELP}`)
    .argument('[names...]', 'the objects (none: every one of the namespace)')
    .addOption(namespaceOption())
    .option('-A, --all-namespaces', 'describe across all namespaces')
    .addOption(new Option('-l, --selector <selector>', SELECTOR_HELP).argParser(parseLabelSelector))
    .addHelpText(
      'after',
      `
As kubectl's describe, there is no -o: 'registrar get TYPE NAME -o yaml' prints an object whole.`,
    )
    .action(
      async (
        resource: string,
        names: string[],
        options: { namespace?: string; allNamespaces?: boolean; selector?: LabelSelector },
        command: Command,
      ) => {
        const requests = parseResourceArgs('describe', [resource, ...names]);
        const selector = options.selector ?? [];
        const named = requests.some((request) => request.names.length > 0);
        if (named && selector.length > 0) {
          throw new UsageError('a name cannot be given with a selector (-l): use one or the other');
        }
        if (named && options.allNamespaces) {
          throw new UsageError(
            'a name cannot be looked up across all namespaces; use -n <namespace>',
          );
        }
        if (options.namespace !== undefined && options.allNamespaces) {
          throw new UsageError('use either -n <namespace> or -A, not both');
        }
        const namespace = options.allNamespaces ? undefined : namespaceOf(options);
        const stores = await context.stores(command);
        const texts: string[] = [];
        const missing: string[] = [];
        for (const { kind, names: wanted } of requests) {
          const refs =
            wanted.length > 0
              ? wanted.map((name) => ({ namespace: namespace ?? namespaceOf({}), name }))
              : await listedRefs(stores, kind, namespace, selector);
          for (const ref of refs) {
            const text = await describeOne(stores, kind, ref, context.now());
            if (text === undefined) {
              const gone =
                kind === 'WorkloadEntry' ? await deletedHint(stores, ref, context.now()) : '';
              missing.push(`${notFound(kind, ref).message}${gone}`);
            } else texts.push(text);
          }
        }
        context.out(texts.join('\n'));
        if (texts.length === 0 && missing.length === 0) {
          const where = namespace === undefined ? '' : ` in ${namespace} namespace`;
          context.io.stderr.write(`No resources found${where}.\n`);
        }
        if (missing.length > 0) {
          for (const message of missing) context.io.stderr.write(`error: ${message}\n`);
          throw new ReportedFailure();
        }
      },
    );
};

/**
 * An entry that is not there may have been deleted lately: say when and why (its history
 * item's last event), and where the rest of its story is.
 */
async function deletedHint(stores: Stores, ref: ObjectRef, now: number): Promise<string> {
  const deleted = await stores.maintenance.deletedEntries(ref.namespace, ref.name, now);
  const last = deleted.at(-1)?.events.at(-1);
  if (!last) return '';
  return `; it was deleted ${formatAge(last.at, now)} ago (${last.reason}: ${last.message}): registrar get events -n ${ref.namespace} --for we/${ref.name}`;
}

/** Every object of a kind in the namespace (all: undefined) whose labels match, in order. */
async function listedRefs(
  { catalog }: Stores,
  kind: ResourceKind,
  namespace: string | undefined,
  selector: LabelSelector,
): Promise<ObjectRef[]> {
  const objects =
    kind === 'WorkloadGroup'
      ? (await catalog.listGroups(namespace)).map((stored) => renderGroup(stored))
      : (await catalog.listEntries(namespace)).map((record) => renderEntry(record));
  return objects
    .filter((object) => matchesSelector(selector, object.metadata.labels))
    .map(({ metadata }) => ({ namespace: metadata.namespace, name: metadata.name }))
    .sort((a, b) =>
      a.namespace === b.namespace
        ? a.name.localeCompare(b.name)
        : a.namespace.localeCompare(b.namespace),
    );
}

/** One object's description, or undefined when it is not there. */
async function describeOne(
  { catalog, registry, sweepPolicy, heartbeats }: Stores,
  kind: ResourceKind,
  ref: ObjectRef,
  now: number,
): Promise<string | undefined> {
  if (kind === 'WorkloadGroup') {
    const stored = await registry.getGroup(ref);
    if (!stored) return undefined;
    // Which heartbeat its live VMs are held to (issue 44): one Query of its held entries.
    const live: EntryRecord[] = [];
    for await (const record of heartbeats.heldEntriesOf(ref)) live.push(record);
    return describeGroup(stored, now, live);
  }
  const record = await catalog.getEntry(ref);
  if (!record) return undefined;
  const group = record.autoRegistrationGroup
    ? await registry.getGroup({ namespace: ref.namespace, name: record.autoRegistrationGroup })
    : undefined;
  const text = describeEntry(record, group, now);
  // Only auto-registered entries are swept; say by which policy (the registrar's own), and
  // whether fail static holds the deletion of this one now.
  if (!record.autoRegistrationGroup) return text + formatEvents(eventsOf(record, now), now);
  const recorded = await sweepPolicy.read();
  const held =
    record.connection?.disconnectedAt === undefined
      ? undefined
      : { disruption: await registry.disruptionRecord(), gracePeriodMs: recorded?.gracePeriodMs };
  const events = eventsOf(record, now, held);
  return text + describeSweepPolicy(recorded) + formatEvents(events, now);
}

/** The registrar's recorded sweep policy, as the last line of an auto-registered entry. */
export function describeSweepPolicy(policy: RecordedSweepPolicy | undefined): string {
  const text = policy
    ? `grace period ${formatDuration(policy.gracePeriodMs)}, stale after 1.5 x ${formatDuration(policy.maxConnectionAgeMs)}, liveness checks every ${formatDuration(policy.livenessIntervalMs)} (recorded ${new Date(policy.recordedAt).toISOString()})`
    : 'not recorded yet (the registrar has not swept this table)';
  return `Sweep Policy:  ${text}\n`;
}

/** One value, or the lines of a map (see `labelLines`, `annotationLines`). */
type FieldValue = string | string[] | undefined;

/** kubectl's describe layout: aligned `Key:  value` lines, maps one pair per line. */
function fields(pairs: [string, FieldValue][], indent = ''): string {
  const width = Math.max(...pairs.map(([key]) => key.length)) + 3;
  const lines: string[] = [];
  for (const [key, value] of pairs) {
    const head = `${indent}${`${key}:`.padEnd(width)}`;
    const values =
      Array.isArray(value) && value.length > 0
        ? value
        : [typeof value === 'string' ? value : '<none>'];
    lines.push(head + values[0], ...values.slice(1).map((v) => ' '.repeat(head.length) + v));
  }
  return `${lines.join('\n')}\n`;
}

/** Labels and ports as `key=value`, annotations as `key: value`, as kubectl describe shows them. */
const labelLines = (map: StringMap | undefined) => mapLines(map ?? {}, '=');
const annotationLines = (map: StringMap | undefined) => mapLines(map ?? {}, ': ');

function mapLines(map: StringMap, separator: string): string[] {
  const pairs = Object.entries(map).sort(([a], [b]) => a.localeCompare(b));
  return pairs.length === 0
    ? ['<none>']
    : pairs.map(([key, value]) => `${key}${separator}${value}`);
}

function when(at: number | undefined, now: number): string | undefined {
  return at === undefined ? undefined : `${formatTimestamp(at)} (${formatAge(at, now)} ago)`;
}

export function describeEntry(
  record: EntryRecord,
  group: StoredGroup | undefined,
  now: number,
): string {
  const entry = renderEntry(record);
  const { metadata, spec } = entry;
  let text = fields([
    ['Name', metadata.name],
    ['Namespace', metadata.namespace],
    ['Labels', labelLines(metadata.labels)],
    ['Annotations', annotationLines(metadata.annotations)],
    ['API Version', entry.apiVersion],
    ['Kind', entry.kind],
    ['Created', when(parseTimestamp(metadata.creationTimestamp), now)],
  ]);
  text += 'Spec:\n';
  text += fields(
    [
      ['Address', spec.address],
      ['Ports', Object.entries(spec.ports ?? {}).map(([name, port]) => `${name}=${port}`)],
      ['Labels', labelLines(spec.labels)],
      ['Network', spec.network],
      ['Locality', spec.locality],
      ['Weight', spec.weight === undefined ? undefined : String(spec.weight)],
      ['Service Account', spec.serviceAccount],
    ],
    '  ',
  );
  const conditions = entry.status?.conditions ?? [];
  text += 'Conditions:\n';
  text +=
    conditions.length === 0
      ? '  <none>\n'
      : indent(
          formatTable(
            ['Type', 'Status', 'LastProbeTime', 'LastTransitionTime', 'Message'],
            conditions.map((c) => [
              c.type,
              c.status,
              c.lastProbeTime ?? '',
              c.lastTransitionTime ?? '',
              c.message ?? '',
            ]),
          ),
        );
  if (record.cordon) {
    const { name, namespace } = metadata;
    text += fields([
      [
        'Maintenance',
        `cordoned ${when(record.cordon.at, now)}: ${record.cordon.message} (out of traffic until: registrar uncordon we ${name} -n ${namespace})`,
      ],
    ]);
  }
  text += 'Registration:\n';
  if (!isAutoRegistered(record)) {
    return `${text}  Hand-made (no istio.io/autoRegistrationGroup): never swept; delete it with 'registrar delete we'.\n`;
  }
  const connection = record.connection;
  return (
    text +
    fields(
      [
        ['Group', record.autoRegistrationGroup],
        ['Group Generation', describeGeneration(record.groupGeneration, group)],
        ['Connected', connectedStatus(record)],
        ['Connected At', when(connection?.connectedAt, now)],
        ['Disconnected At', when(connection?.disconnectedAt, now)],
        ['Live Connections', String(connection?.connectionIds.length ?? 0)],
        ['Controller', connection?.controller],
        ['Verified Identity', describeIdentity(record.identity)],
        ['Agent Version', agentVersionCell(record)],
        // The bound each connection is held to (issue 44): what it was told, or acknowledged.
        ['Heartbeat', heldLines(record, heartbeatOf(group?.group), (at) => formatAge(at, now))],
      ],
      '  ',
    )
  );
}

/** Entries keep the template they were built from; say when the group has moved past it. */
export function describeGeneration(
  built: number | undefined,
  group: StoredGroup | undefined,
): string {
  const from = built === undefined ? 'unknown' : String(built);
  if (!group) return `${from} (the group no longer exists)`;
  if (built === undefined || group.generation === built)
    return `${from} (the group's current generation)`;
  return `${from} (the group is now at generation ${group.generation}: this entry keeps the older template until it is deleted and its VM registers again)`;
}

function describeIdentity(identity: VerifiedIdentity | undefined): string | undefined {
  if (!identity) return undefined;
  const scope = [
    identity.namespace && `namespace ${identity.namespace}`,
    identity.serviceAccount && `service account ${identity.serviceAccount}`,
  ].filter(Boolean);
  return scope.length === 0 ? identity.principal : `${identity.principal} (${scope.join(', ')})`;
}

function describeGroup(stored: StoredGroup, now: number, live: readonly EntryRecord[]): string {
  const group = renderGroup(stored);
  const { metadata } = group;
  const setting = heartbeatOf(stored.group);
  return (
    fields([
      ['Name', metadata.name],
      ['Namespace', metadata.namespace],
      ['Labels', labelLines(metadata.labels)],
      ['Annotations', annotationLines(metadata.annotations)],
      ['API Version', group.apiVersion],
      ['Kind', group.kind],
      ['Generation', String(stored.generation)],
      ['Created', when(parseTimestamp(metadata.creationTimestamp), now)],
      ['Heartbeat', formatHeartbeat(setting)],
      ['Live VMs', formatCensus(censusOf(live, setting))],
    ]) +
    'Spec:\n' +
    indent(toYaml(group.spec))
  );
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => (line ? `  ${line}` : line))
    .join('\n');
}
