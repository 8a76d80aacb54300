import { describe, expect, it } from 'vitest';
import { InvalidDocumentsError, parseIstioDocuments } from '../../lib/protocol/istio-documents.ts';
import { CATALOG_ITEM_LIMITS } from '../../lib/store/catalog-item-limits.ts';

/**
 * DESIGN rule 5: an empty string in an optional field means unset, as in Kubernetes
 * (`serviceAccount: ""` is no service account). The field is dropped, neither refused nor
 * stored as "".
 */

const GROUP = `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: web, namespace: shop}
spec:
  template:
    ports: {http: 8080}
`;

const ENTRY = `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: db-1, namespace: shop}
spec:
  address: 10.0.0.5
`;

function onlyGroup(input: string) {
  const [document] = parseIstioDocuments(input, { limits: CATALOG_ITEM_LIMITS });
  if (document?.kind !== 'WorkloadGroup') throw new Error('not a group');
  return document.group;
}

function onlyEntry(input: string, namespace?: string) {
  const [document] = parseIstioDocuments(input, {
    limits: CATALOG_ITEM_LIMITS,
    ...(namespace === undefined ? {} : { namespace }),
  });
  if (document?.kind !== 'WorkloadEntry') throw new Error('not an entry');
  return document.entry;
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

describe('a WorkloadGroup template', () => {
  it.each(['serviceAccount', 'network', 'locality', 'address'])(
    'reads %s: "" as unset',
    (field) => {
      const group = onlyGroup(
        GROUP.replace('ports: {http: 8080}', `ports: {http: 8080}\n    ${field}: ""`),
      );
      expect(group.spec.template).toEqual({ ports: { http: 8080 } });
      expect(Object.keys(group.spec.template)).toEqual(['ports']);
    },
  );

  it('still refuses a service account that is not empty but invalid, naming the value', () => {
    expect(problemsOf(GROUP.replace('ports: {http: 8080}', 'serviceAccount: " "'))).toEqual([
      "document 1 (WorkloadGroup web): spec.template.serviceAccount: must be a DNS-1123 subdomain (lower case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters), got ' '",
    ]);
  });

  it('keeps a service account that is set', () => {
    const group = onlyGroup(GROUP.replace('ports: {http: 8080}', 'serviceAccount: web-sa'));
    expect(group.spec.template).toEqual({ serviceAccount: 'web-sa' });
  });
});

describe('a WorkloadGroup probe', () => {
  it('reads empty httpGet path, host and scheme and tcpSocket host as unset', () => {
    const group = onlyGroup(`${GROUP}  probe:
    httpGet: {port: 8080, path: "", host: "", scheme: ""}
`);
    expect(group.spec.probe).toEqual({ httpGet: { port: 8080 } });
    const tcp = onlyGroup(`${GROUP}  probe:
    tcpSocket: {port: 8080, host: ""}
`);
    expect(tcp.spec.probe).toEqual({ tcpSocket: { port: 8080 } });
  });
});

describe('a hand-made WorkloadEntry', () => {
  it('reads empty serviceAccount, network, locality and address as unset', () => {
    const entry = onlyEntry(
      ENTRY.replace(
        'address: 10.0.0.5',
        'address: ""\n  network: vpc-1\n  serviceAccount: ""\n  locality: ""',
      ),
    );
    expect(entry.spec).toEqual({ network: 'vpc-1' });
  });

  it('reads namespace: "" as unset: the namespace the command names, else default', () => {
    const input = ENTRY.replace('namespace: shop', 'namespace: ""');
    expect(onlyEntry(input, 'billing').metadata.namespace).toBe('billing');
    expect(onlyEntry(input).metadata.namespace).toBe('default');
  });
});
