import { canonicalAddress } from '../domain/address.ts';
import { InvalidRequestError } from '../domain/errors.ts';
import { type ConnectRequest, LOCALITY_LABEL, type StringMap } from '../domain/model.ts';
import { parseReleaseVersion } from '../domain/release-version.ts';
import {
  isDns1123Label,
  isDns1123Subdomain,
  isLabelKey,
  isLabelValue,
  isLocality,
  isNetworkName,
} from '../domain/validation.ts';
import type { WebSocketConnectEvent } from './websocket-events.ts';

const USAGE = 'connect with ?group=<name>&namespace=<ns>&ip=<addr>';
// Bounds that no real VM reaches; they keep one request from building a huge entry.
export const MAX_IPS = 16;
export const MAX_LABELS = 64;

const RULES = {
  group:
    'must be a DNS-1123 subdomain (lower case letters, digits, - and ., at most 253 characters)',
  namespace: 'must be a DNS-1123 label (lower case letters, digits and -, at most 63 characters)',
  network: 'must be letters, digits, -, _ and ., at most 63 characters',
  locality: 'must be region[/zone[/subzone]], each part letters, digits, -, _ and .',
  agentVersion: 'must be a semantic version such as 0.2.0 (at most 64 characters)',
} as const;

type Field = keyof typeof RULES | 'label' | 'ip';

/**
 * Reads protocol v1's query string (`?group=&namespace=&ip=[&ip=][&network=][&locality=]
 * [&label=k=v]...[&agentVersion=]`) into a validated ConnectRequest. Parameters it does not
 * know are ignored: a newer agent's additions reach an older registrar harmlessly. Throws InvalidRequestError naming every
 * bad field with its value; nothing has been written at that point.
 */
export function parseConnectRequest(
  event: Pick<WebSocketConnectEvent, 'queryStringParameters' | 'multiValueQueryStringParameters'>,
): ConnectRequest {
  const values = (field: Field) => queryValues(event, field);
  // Every problem, field by field in this order; the first one names the field of the error.
  const problems: { field: Field; message: string }[] = [];
  const report = (field: Field) => (message: string) => problems.push({ field, message });
  const group = required('group', isDns1123Subdomain, values('group'), report('group'));
  const namespace = required('namespace', isDns1123Label, values('namespace'), report('namespace'));
  const ip = ips(values('ip'), report('ip'));
  const network = once('network', isNetworkName, values('network'), report('network'));
  const locality = once('locality', isLocality, values('locality'), report('locality'));
  // Istio drops an agent's `istio-locality` label instead of refusing the VM: locality comes
  // from the locality field. Dropped before validation, so its value cannot fail the connect.
  const label = labels(
    values('label').filter((value) => !value.startsWith(`${LOCALITY_LABEL}=`)),
    report('label'),
  );
  const agentVersion = once(
    'agentVersion',
    (value) => parseReleaseVersion(value) !== undefined,
    values('agentVersion'),
    report('agentVersion'),
  );
  const [first] = problems;
  if (first) {
    const message = withUsageOnce(problems.map((problem) => problem.message));
    throw new InvalidRequestError(message, first.field);
  }
  const request: ConnectRequest = { group, namespace, ips: ip, labels: label };
  if (network !== undefined) request.network = network;
  if (locality !== undefined) request.locality = locality;
  if (agentVersion !== undefined) request.agentVersion = agentVersion;
  return request;
}

/** Several missing parameters: say how to connect once, at the end. */
function withUsageOnce(messages: string[]): string {
  const suffix = `; ${USAGE}`;
  const bare = messages.map((message) => message.replace(suffix, ''));
  const needsUsage = messages.some((message) => message.endsWith(suffix));
  return bare.join('; ') + (needsUsage ? suffix : '');
}

/**
 * All values of a parameter. API Gateway puts the last of repeated values into
 * `queryStringParameters` and all of them into `multiValueQueryStringParameters`.
 */
function queryValues(
  event: Pick<WebSocketConnectEvent, 'queryStringParameters' | 'multiValueQueryStringParameters'>,
  name: string,
): string[] {
  const many = event.multiValueQueryStringParameters?.[name];
  const one = event.queryStringParameters?.[name];
  const all = many ?? (one === undefined ? [] : [one]);
  // `?network=` means "not given", not "the empty network".
  return all.filter((value) => value !== '');
}

/** Values are echoed in messages, but shortened: a request may carry anything. */
function shown(value: string): string {
  return value.length > 80 ? `${value.slice(0, 80)}...` : value;
}

type Report = (message: string) => void;

/** A parameter given at most once, valid when given. Plain checks: no validation library. */
function once(
  field: keyof typeof RULES,
  valid: (value: string) => boolean,
  values: string[],
  report: Report,
): string | undefined {
  if (values.length > 1) {
    report(`query parameter '${field}' given ${values.length} times; give it once`);
    return undefined;
  }
  const [value] = values;
  if (value !== undefined && !valid(value)) {
    report(`invalid ${field} '${shown(value)}': ${RULES[field]}`);
  }
  return value;
}

function required(
  field: keyof typeof RULES,
  valid: (value: string) => boolean,
  values: string[],
  report: Report,
): string {
  const value = once(field, valid, values, report);
  if (values.length === 0) report(`missing query parameter '${field}'; ${USAGE}`);
  return value ?? '';
}

/**
 * One or more addresses, each canonical (rule 1: an IPv4-mapped IPv6 address is the IPv4
 * address, IPv6 in RFC 5952 form) and reachable: no loopback, link-local, multicast,
 * broadcast or unspecified address. The first one names the entry, so it must be spelled one
 * way only, or one VM would get two entries.
 */
function ips(values: string[], report: Report): string[] {
  if (values.length === 0) {
    report(`missing query parameter 'ip'; ${USAGE}`);
  } else if (values.length > MAX_IPS) {
    report(`too many ip parameters (${values.length}); give at most ${MAX_IPS}`);
  }
  const canonical = values.map((value) => {
    const checked = canonicalAddress(value);
    if (!checked.ok) report(`invalid ip '${shown(value)}': ${checked.problem}`);
    return checked.ok ? checked.address : value;
  });
  // `ip=10.0.0.1&ip=::ffff:10.0.0.1` is one address given twice.
  return [...new Set(canonical)];
}

function labels(values: string[], report: Report): StringMap {
  if (values.length > MAX_LABELS) {
    report(`too many label parameters (${values.length}); give at most ${MAX_LABELS}`);
  }
  const seen = new Set<string>();
  const pairs: [string, string][] = [];
  for (const value of values) {
    const problem = labelProblem(value, seen);
    if (problem) report(problem);
    const at = value.indexOf('=');
    pairs.push([value.slice(0, at), value.slice(at + 1)]);
  }
  // Own data properties whatever the key: an assignment `map[key] = value` would set the
  // prototype for `__proto__` instead of a label (refused as a key anyway, but never silently).
  return Object.fromEntries(pairs);
}

function labelProblem(value: string, seen: Set<string>): string | undefined {
  const at = value.indexOf('=');
  if (at === -1) return `invalid label '${shown(value)}': must be <key>=<value>`;
  const key = value.slice(0, at);
  const labelValue = value.slice(at + 1);
  if (!isLabelKey(key)) {
    return `invalid label key '${shown(key)}': must be [prefix/]name, name letters, digits, -, _ and . (at most 63 characters)`;
  }
  if (!isLabelValue(labelValue)) {
    return `invalid value '${shown(labelValue)}' of label '${shown(key)}': must be empty or letters, digits, -, _ and . (at most 63 characters)`;
  }
  if (seen.has(key)) return `label '${shown(key)}' given more than once; give it once`;
  seen.add(key);
  return undefined;
}
