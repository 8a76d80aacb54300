import { describe, expect, it } from 'vitest';
import { InvalidDocumentsError, parseIstioDocuments } from '../../lib/protocol/istio-documents.ts';
import { CATALOG_ITEM_LIMITS } from '../../lib/store/catalog-item-limits.ts';

/**
 * Port names are DNS-1123 labels, as Istio's `ValidatePortName` requires of WorkloadEntry and
 * WorkloadGroup ports: a name it would refuse must be refused at apply, not when projected.
 */

const PORT_NAME_RULE =
  "invalid port name: must be a DNS-1123 label (lower case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters), as Istio requires";

function group(ports: string): string {
  return `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: web, namespace: shop}
spec:
  template:
    ports: ${ports}
`;
}

function entry(ports: string): string {
  return `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: db-1, namespace: shop}
spec:
  address: 10.0.0.5
  ports: ${ports}
`;
}

function problemsOf(input: string): string[] {
  try {
    parseIstioDocuments(input, { limits: CATALOG_ITEM_LIMITS });
  } catch (error) {
    if (error instanceof InvalidDocumentsError) return error.problems;
    throw error;
  }
  throw new Error('the input was accepted');
}

describe('port names', () => {
  it.each(['http', 'grpc-web', 'h2c', '80', 'a', 'a'.repeat(63)])(
    'accepts the port name %j in a group template and in an entry',
    (name) => {
      const [parsedGroup] = parseIstioDocuments(group(`{"${name}": 8080}`), {
        limits: CATALOG_ITEM_LIMITS,
      });
      expect(
        parsedGroup?.kind === 'WorkloadGroup' && parsedGroup.group.spec.template.ports,
      ).toEqual({ [name]: 8080 });
      const [parsedEntry] = parseIstioDocuments(entry(`{"${name}": 8080}`), {
        limits: CATALOG_ITEM_LIMITS,
      });
      expect(parsedEntry?.kind === 'WorkloadEntry' && parsedEntry.entry.spec.ports).toEqual({
        [name]: 8080,
      });
    },
  );

  it.each([
    ['HTTP', 'spec.template.ports.HTTP'],
    ['http_web', 'spec.template.ports.http_web'],
    ['-http', 'spec.template.ports["-http"]'],
    ['http-', 'spec.template.ports.http-'],
    ['http.web', 'spec.template.ports["http.web"]'],
    ['my port', 'spec.template.ports["my port"]'],
    ['', 'spec.template.ports[""]'],
    ['a'.repeat(64), `spec.template.ports.${'a'.repeat(64)}`],
  ])('refuses the port name %j in a group template, naming %s', (name, path) => {
    expect(problemsOf(group(`{"${name}": 8080}`))).toEqual([
      `document 1 (WorkloadGroup web): ${path}: ${PORT_NAME_RULE}, got '${name}'`,
    ]);
  });

  it('refuses a port name of a hand-made entry, naming the field and the value', () => {
    expect(problemsOf(entry('{Metrics: 9090}'))).toEqual([
      `document 1 (WorkloadEntry db-1): spec.ports.Metrics: ${PORT_NAME_RULE}, got 'Metrics'`,
    ]);
  });

  it('reports a bad name and a bad number of the same port, and every bad port', () => {
    expect(problemsOf(entry('{Web: 0, ok: 80, tls: 65536}'))).toEqual([
      `document 1 (WorkloadEntry db-1): spec.ports.Web: ${PORT_NAME_RULE}, got 'Web'`,
      'document 1 (WorkloadEntry db-1): spec.ports.Web: must be a port number 1-65535, got 0',
      'document 1 (WorkloadEntry db-1): spec.ports.tls: must be a port number 1-65535, got 65536',
    ]);
  });
});

describe('port numbers', () => {
  it.each([1, 443, 65535])('accepts %j', (number) => {
    const [parsed] = parseIstioDocuments(entry(`{http: ${number}}`), {
      limits: CATALOG_ITEM_LIMITS,
    });
    expect(parsed?.kind === 'WorkloadEntry' && parsed.entry.spec.ports).toEqual({ http: number });
  });

  it.each([
    ['0', '0'],
    ['65536', '65536'],
    ['-1', '-1'],
    ['80.5', '80.5'],
    ['"80"', "'80'"],
    ['null', 'null'],
    ['[80]', '[80]'],
  ])('refuses %s, showing the value', (yaml, shown) => {
    expect(problemsOf(group(`{http: ${yaml}}`))).toEqual([
      `document 1 (WorkloadGroup web): spec.template.ports.http: must be a port number 1-65535, got ${shown}`,
    ]);
  });
});
