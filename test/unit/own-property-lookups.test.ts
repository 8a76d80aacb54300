import { describe, expect, it } from 'vitest';
import { endpointPorts, matchesSelector } from '../../lib/projection/desired-endpoints.ts';
import { canonical, type ServiceObject } from '../../lib/projection/objects.ts';
import { parseConnectRequest } from '../../lib/protocol/connect-request.ts';
import { record, text } from '../../lib/validation/fields.ts';

/**
 * Maps keyed by strings from outside (an agent's labels, a Service's selector and port names,
 * a document's keys) are looked up and built by own property only: a key named like a member
 * of Object.prototype is data like any other, never the prototype's function and never the
 * prototype itself.
 */
const PROTOTYPE_NAMES = Object.getOwnPropertyNames(Object.prototype);

function service(ports: ServiceObject['spec']['ports']): ServiceObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: 'shop' },
    spec: { selector: { app: 'web' }, ports },
  };
}

describe('own-property lookups', () => {
  it.each(PROTOTYPE_NAMES)('a selector on %s matches only a label of that name', (name) => {
    expect(matchesSelector({ [name]: 'x' }, { app: 'web' })).toBe(false);
    expect(matchesSelector({ [name]: 'x' }, { [name]: 'x' })).toBe(true);
  });

  it('resolves a Service port named constructor only from an entry port of that name', () => {
    const ports = [{ name: 'constructor', port: 80, targetPort: 'valueof' }];
    expect(endpointPorts(service(ports), { http: 8080 })).toEqual([]);
    expect(endpointPorts(service(ports), { constructor: 9090 })).toEqual([
      { name: 'constructor', port: 9090, protocol: 'TCP' },
    ]);
  });

  it('keeps a __proto__ key of a parsed cluster object as a key, not as the prototype', () => {
    const parsed = JSON.parse('{"metadata":{"labels":{"__proto__":{"polluted":"yes"},"a":"b"}}}');
    const out = canonical(parsed) as { metadata: { labels: Record<string, unknown> } };
    expect(Object.keys(out.metadata.labels)).toEqual(['__proto__', 'a']);
    expect((out.metadata.labels as { polluted?: string }).polluted).toBeUndefined();
  });

  it('reads a mapping key __proto__ as an entry (refused by its key test), not as the prototype', () => {
    const read = record(
      (key) => /^[A-Z]+$/.test(key),
      'must be upper case',
      text(() => true, 'must be text'),
    );
    const problems: { path: string; message: string }[] = [];
    const out = read(JSON.parse('{"__proto__":"x","A":"y"}'), 'env', problems);
    expect(Object.keys(out)).toEqual(['__proto__', 'A']);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(problems).toHaveLength(1);
  });

  it.each(PROTOTYPE_NAMES)(
    'an agent label %s=x is parsed as a label or refused, never lost',
    (name) => {
      const event = {
        queryStringParameters: { group: 'web', namespace: 'shop', ip: '10.0.0.1' },
        multiValueQueryStringParameters: { label: [`${name}=x`] },
      };
      let labels: Record<string, string> | undefined;
      try {
        labels = parseConnectRequest(event).labels;
      } catch (error) {
        expect((error as Error).message).toContain(`invalid label key '${name}'`);
        return;
      }
      expect(Object.hasOwn(labels, name)).toBe(true);
      expect(labels[name]).toBe('x');
    },
  );
});
