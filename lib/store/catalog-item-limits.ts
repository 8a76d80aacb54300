import { buildEntry } from '../domain/build-entry.ts';
import { EVENT_MESSAGE_MAX, EVENTS_TRIM_AT } from '../domain/entry-events.ts';
import { MAX_CORDON_MESSAGE } from '../domain/entry-record.ts';
import { formatPath } from '../domain/field-path.ts';
import type { ConnectRequest, WorkloadEntry, WorkloadGroup } from '../domain/model.ts';
import {
  DNS1123_SUBDOMAIN_MAX,
  LABEL_NAME_MAX,
  LABEL_VALUE_MAX,
  LOCALITY_MAX_PARTS,
} from '../domain/validation.ts';
import type { DocumentSizeLimits, SizeRefusal } from '../protocol/document-size-limits.ts';
import { encodeEntry, encodeGroup } from './item-codec.ts';
import {
  type FieldSize,
  formatBytes,
  itemSize,
  largestFields,
  MAX_ITEM_BYTES,
  utf8Bytes,
  valueSize,
} from './item-size.ts';

/**
 * Whether a WorkloadGroup or a hand-made WorkloadEntry fits in one DynamoDB item, checked
 * before anything is written (by `apply`'s parser for every document of the input, and again
 * by the catalog before its put). A refusal names the fields that make the object large.
 *
 * A group is also refused when the entries it builds would not fit: every connect of its VMs
 * would fail. Each entry holds the template, the group's `spec.metadata` annotations and the
 * merged labels twice (`metadata.labels` and `spec.labels`), plus what a connect adds.
 */

// What the store adds to an applied object, at its largest: a uid (a UUID), a creation time
// (RFC 3339 with milliseconds), generation and revision (numbers), and the write id of its
// retry-safe put (a UUID in the `writeId` attribute).
const UID = '00000000-0000-0000-0000-000000000000';
const CREATED = '2000-01-01T00:00:00.000Z';
const LARGEST_COUNT = Number.MAX_SAFE_INTEGER;
const WRITE_ID_BYTES = utf8Bytes('writeId') + UID.length;

/** Protocol v1's cap on an agent's `label` parameters (MAX_LABELS in connect-request.ts). */
export const AGENT_LABELS_MAX = 64;
// A label: key `prefix/name` (253 + 1 + 63 bytes), value 63, 1 byte of map overhead; each
// agent label lands twice (metadata.labels and spec.labels): 64 x 2 x 381 = 48,768 bytes.
const AGENT_LABEL_BYTES = DNS1123_SUBDOMAIN_MAX + 1 + LABEL_NAME_MAX + LABEL_VALUE_MAX + 1;
const AGENT_LABELS_BYTES = AGENT_LABELS_MAX * 2 * AGENT_LABEL_BYTES;
// Connection and health state: the verified identity (an IAM role ARN is at most 2,048 bytes),
// the controller, a few holders (`conns`, `held:<id>`, `departed`: tens of bytes each), the
// health message (at most 1,024 characters) and the times. 16 KB is several times that.
const CONNECTION_STATE_BYTES = 16 * 1024;
/** The most a connect adds to an entry built from a group: 64 KB (48,768 + 16,384 bytes). */
export const CONNECT_RESERVE_BYTES = AGENT_LABELS_BYTES + CONNECTION_STATE_BYTES;

// An event in the entry's list: `{t, r, m, w}` (names 4 bytes, map and element overhead 8,
// time 9, reason up to 24, a message of EVENT_MESSAGE_MAX characters at 4 UTF-8 bytes each).
const EVENT_BYTES = 8 + 4 + 9 + 24 + EVENT_MESSAGE_MAX * 4 + 1;
/**
 * What the registrar adds to any entry later, hand-made ones too: its events (the list is
 * trimmed at EVENTS_TRIM_AT; 5 more for appends that race a trim) and an operator's cordon
 * (its message, times and id): ~21 KB.
 */
export const HISTORY_RESERVE_BYTES =
  (EVENTS_TRIM_AT + 5) * EVENT_BYTES + MAX_CORDON_MESSAGE * 4 + 256;

// The longest address, network and locality an agent may give (the template's are counted
// as they are when the agent gives none).
const LONGEST_REQUEST: Omit<ConnectRequest, 'group' | 'namespace'> = {
  ips: ['ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
  network: 'n'.repeat(LABEL_VALUE_MAX),
  locality: Array.from({ length: LOCALITY_MAX_PARTS }, () => 'l'.repeat(LABEL_VALUE_MAX)).join('/'),
  labels: {},
};

/** The group's stored item, and every entry its VMs would get, fit in a DynamoDB item. */
export function groupSizeRefusal(group: WorkloadGroup): SizeRefusal | undefined {
  const stored = withServerFields(group);
  const item = encodeGroup({ group: stored, generation: LARGEST_COUNT }, LARGEST_COUNT);
  const total = itemSize(item) + WRITE_ID_BYTES;
  if (total > MAX_ITEM_BYTES) {
    return refusal(
      largestFields(item.group, total),
      `(the whole WorkloadGroup ${formatBytes(total)}); a WorkloadGroup is stored as one DynamoDB item, which must stay under ${formatBytes(MAX_ITEM_BYTES)}`,
    );
  }
  const { name, namespace } = group.metadata;
  const request = { ...LONGEST_REQUEST, group: name, namespace };
  const entry = buildEntry(stored, request, 0);
  const entryItem = encodeEntry({
    entry: withServerFields(entry),
    revision: LARGEST_COUNT,
    autoRegistrationGroup: name,
    healthChecksEnabled: true,
    groupGeneration: LARGEST_COUNT,
  });
  const entryTotal = itemSize(entryItem) + CONNECT_RESERVE_BYTES + HISTORY_RESERVE_BYTES;
  if (entryTotal <= MAX_ITEM_BYTES) return undefined;
  // Only what the group puts into its entries: its template and `spec.metadata`.
  const carried = { spec: { metadata: stored.spec.metadata, template: stored.spec.template } };
  return refusal(
    largestFields(carried, valueSize(carried)),
    `: each WorkloadEntry of this group holds its template, its annotations and its labels twice (metadata.labels and spec.labels), and would be up to ${formatBytes(entryTotal)} with what a connecting agent and its event history add (up to ${formatBytes(CONNECT_RESERVE_BYTES + HISTORY_RESERVE_BYTES)}); a WorkloadEntry is stored as one DynamoDB item, which must stay under ${formatBytes(MAX_ITEM_BYTES)}`,
  );
}

/** A hand-made entry's stored item fits in a DynamoDB item. */
export function entrySizeRefusal(entry: WorkloadEntry): SizeRefusal | undefined {
  const item = encodeEntry({ entry: withServerFields(entry), revision: LARGEST_COUNT });
  const total = itemSize(item) + WRITE_ID_BYTES;
  if (total + HISTORY_RESERVE_BYTES <= MAX_ITEM_BYTES) return undefined;
  const room =
    total <= MAX_ITEM_BYTES
      ? ` with room for its events and a cordon (${formatBytes(HISTORY_RESERVE_BYTES)})`
      : '';
  return refusal(
    largestFields(item.entry, total),
    `(the whole WorkloadEntry ${formatBytes(total)}); a WorkloadEntry is stored as one DynamoDB item, which must stay under ${formatBytes(MAX_ITEM_BYTES)}${room}`,
  );
}

/** The limits of one DynamoDB item, as the parser and the catalog check them. */
export const CATALOG_ITEM_LIMITS: DocumentSizeLimits = { groupSizeRefusal, entrySizeRefusal };

function refusal(fields: FieldSize[], why: string): SizeRefusal {
  const named = fields.map((field) => `${formatPath(field.path)} is ${formatBytes(field.bytes)}`);
  const what = fields.length > 1 ? 'these fields' : 'it';
  const separator = why.startsWith(':') ? '' : ' ';
  return {
    field: formatPath(fields[0]?.path ?? []),
    message: `${named.join(', ')}${separator}${why}: make ${what} smaller`,
  };
}

/** The object as the store writes it: uid and creation time set (placeholders when absent). */
function withServerFields<T extends WorkloadGroup | WorkloadEntry>(object: T): T {
  const metadata = {
    ...object.metadata,
    uid: object.metadata.uid ?? UID,
    creationTimestamp: object.metadata.creationTimestamp ?? CREATED,
  };
  return { ...object, metadata };
}
