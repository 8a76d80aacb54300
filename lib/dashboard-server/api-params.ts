import { isDns1123Label, isDns1123Subdomain } from '../domain/validation.ts';
import { parseLabelSelector } from '../presentation/label-selector.ts';
import {
  CONNECTION_FILTERS,
  ENTRY_COLUMNS,
  type EntryColumn,
  HEALTH_FILTERS,
} from './api-types.ts';
import type { ConnectionFilter, EntryQuery, HealthFilter } from './entry-rows.ts';

/**
 * The API's query parameters, checked: a bad one is a 400 that names the parameter and the
 * value (shown as JSON, so nothing in it can be markup), and nothing is read.
 */
export class BadParameter extends Error {}

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 500;

export function namespaceParam(params: URLSearchParams): string {
  const namespace = params.get('namespace');
  if (namespace === null || namespace === '') {
    throw new BadParameter("missing parameter 'namespace'");
  }
  if (!isDns1123Label(namespace)) {
    throw new BadParameter(
      `invalid namespace ${JSON.stringify(namespace)}: lower case letters, digits and '-', at most 63 characters`,
    );
  }
  return namespace;
}

export function nameParam(params: URLSearchParams, what = "an entry's name"): string {
  const name = params.get('name');
  if (name === null || name === '') throw new BadParameter("missing parameter 'name'");
  if (!isDns1123Subdomain(name)) {
    throw new BadParameter(
      `invalid name ${JSON.stringify(name)}: ${what} is a DNS-1123 subdomain (lower case letters, digits, '-' and '.')`,
    );
  }
  return name;
}

export function entryQueryParams(params: URLSearchParams): EntryQuery {
  const query: EntryQuery = {
    selector: selectorParam(params.get('selector') ?? ''),
    sort: oneOf('sort', params.get('sort') ?? 'name', ENTRY_COLUMNS) as EntryColumn,
    order: oneOf('order', params.get('order') ?? 'asc', ['asc', 'desc'] as const),
    page: integer('page', params.get('page') ?? '1', 1, Number.MAX_SAFE_INTEGER),
    pageSize: integer(
      'pageSize',
      params.get('pageSize') ?? String(DEFAULT_PAGE_SIZE),
      1,
      MAX_PAGE_SIZE,
    ),
  };
  const group = nonEmpty(params.get('group'));
  if (group !== undefined) {
    if (!isDns1123Subdomain(group)) {
      throw new BadParameter(
        `invalid group ${JSON.stringify(group)}: a group's name is a DNS-1123 subdomain`,
      );
    }
    query.group = group;
  }
  const health = nonEmpty(params.get('health'));
  if (health !== undefined) query.health = oneOf('health', health, HEALTH_FILTERS) as HealthFilter;
  const connection = nonEmpty(params.get('connection'));
  if (connection !== undefined) {
    query.connection = oneOf('connection', connection, CONNECTION_FILTERS) as ConnectionFilter;
  }
  const name = nonEmpty(params.get('q'));
  if (name !== undefined) {
    if (name.length > 253) throw new BadParameter('parameter q: at most 253 characters');
    query.name = name;
  }
  return query;
}

function selectorParam(text: string) {
  try {
    return parseLabelSelector(text);
  } catch (error) {
    throw new BadParameter(
      `invalid label selector ${JSON.stringify(text)}: ${(error as Error).message}`,
    );
  }
}

function oneOf<T extends string>(name: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) {
    throw new BadParameter(
      `invalid ${name} ${JSON.stringify(value)}: one of ${allowed.join(', ')}`,
    );
  }
  return value as T;
}

function integer(name: string, value: string, min: number, max: number): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || number < min || number > max) {
    throw new BadParameter(
      `invalid ${name} ${JSON.stringify(value)}: a whole number from ${min} to ${max}`,
    );
  }
  return number;
}

function nonEmpty(value: string | null): string | undefined {
  return value === null || value === '' ? undefined : value;
}
