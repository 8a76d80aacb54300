/**
 * The values a template works on: what JSON holds, as kubectl hands objects to Go's template
 * engine (decoded into `map[string]interface{}`). `undefined` is Go's "no value" (a missing
 * map key), `null` is nil. Numbers are one kind: a whole number prints and compares as Go's
 * int, any other as float64 (kubectl decodes whole JSON numbers to int64).
 */

export type Value = undefined | null | boolean | number | string | Value[] | GoMap;

export interface GoMap {
  [key: string]: Value;
}

export function isMap(value: Value): value is GoMap {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A whole number an int64 holds: Go's int; any other number is a float64. */
export function isInt(value: number): boolean {
  return Number.isInteger(value) && Math.abs(value) < 2 ** 63;
}

/** The data as JSON would carry it: no `undefined` fields, dates as strings. */
export function fromJson(data: unknown): Value {
  const text = JSON.stringify(data);
  return text === undefined ? undefined : (JSON.parse(text) as Value);
}

/**
 * Go's truth: false, 0, nil, no value, and an empty string, list or map are false; everything
 * else is true.
 */
export function truth(value: Value): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') return value !== 0;
  if (typeof value === 'string' || Array.isArray(value)) return value.length > 0;
  return Object.keys(value).length > 0;
}

/** The Go type a value has inside kubectl's decoded object, as Go's messages name it. */
export function goType(value: Value): string {
  if (value === undefined || value === null) return 'interface {}';
  if (typeof value === 'number') return isInt(value) ? 'int' : 'float64';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'boolean') return 'bool';
  return Array.isArray(value) ? '[]interface {}' : 'map[string]interface {}';
}

/** A map's keys in the order Go visits and prints them: sorted. */
export function sortedKeys(map: GoMap): string[] {
  return Object.keys(map).sort();
}

/** What `eq`, `lt` and the other comparisons see of a value. */
export type BasicKind = 'invalid' | 'bool' | 'number' | 'string' | 'other';

export function basicKind(value: Value): BasicKind {
  if (value === undefined || value === null) return 'invalid';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'string') return 'string';
  return 'other';
}
