import { describe, expect, it } from 'vitest';
import { InvalidDocumentsError, parseIstioDocuments } from '../../lib/protocol/istio-documents.ts';
import { CATALOG_ITEM_LIMITS } from '../../lib/store/catalog-item-limits.ts';

/**
 * A document may not set state only the registrar writes: a hand-made entry that carries the
 * system annotations or a `Healthy` condition would look connected, healthy, or owned by a
 * group; a group's `spec.metadata.annotations` would claim them for its entries.
 */

const ENTRY = `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata:
  name: db-1
  namespace: shop
spec:
  address: 10.0.0.5
`;

const GROUP = `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: web, namespace: shop}
spec:
  metadata:
    annotations: {team: payments}
  template: {ports: {http: 8080}}
`;

function problemsOf(input: string): string[] {
  try {
    parseIstioDocuments(input, { limits: CATALOG_ITEM_LIMITS });
  } catch (error) {
    if (error instanceof InvalidDocumentsError) return error.problems;
    throw error;
  }
  throw new Error('the input was accepted');
}

function withAnnotation(key: string, value: string): string {
  return ENTRY.replace('namespace: shop', `namespace: shop\n  annotations: {"${key}": "${value}"}`);
}

describe('hand-made entries', () => {
  it.each([
    [
      'istio.io/workloadController',
      'registrar-1',
      'the control plane instance that holds a connected VM',
    ],
    ['istio.io/connectedAt', '2026-03-01T12:00:00Z', "when a VM's agent connected"],
    ['istio.io/disconnectedAt', '2026-03-01T12:00:00Z', "when a VM's last connection went away"],
    [
      'proxy.istio.io/health-checks-enabled',
      'true',
      'on entries of a group with a probe, whose agents report health; a hand-made entry has no agent, so it would never become healthy',
    ],
  ])('refuses the system annotation %s, naming the field and the value', (key, value, records) => {
    expect(problemsOf(withAnnotation(key, value))).toEqual([
      `document 1 (WorkloadEntry db-1): metadata.annotations["${key}"]: only the registrar sets this (${records}); remove the annotation to add a hand-made entry, got '${value}'`,
    ]);
  });

  it('refuses the group annotation, as before', () => {
    expect(problemsOf(withAnnotation('istio.io/autoRegistrationGroup', 'web'))).toEqual([
      `document 1 (WorkloadEntry db-1): metadata.annotations["istio.io/autoRegistrationGroup"]: only auto-registration sets this (entries of a group are created when its VMs connect); remove the annotation to add a hand-made entry, got 'web'`,
    ]);
  });

  it('refuses a Healthy condition, naming its index, whatever its status', () => {
    const input = `${ENTRY}status:
  conditions:
  - {type: Ready, status: "True"}
  - {type: Healthy, status: "False", message: fine really}
`;
    expect(problemsOf(input)).toEqual([
      `document 1 (WorkloadEntry db-1): status.conditions[1].type: only the registrar sets the Healthy condition (from the health reports of a connected VM's agent); remove it to add a hand-made entry, got 'Healthy'`,
    ]);
  });

  it('reports a forgery together with the other problems of the document', () => {
    const input = withAnnotation('istio.io/connectedAt', 'now').replace(
      'address: 10.0.0.5',
      'address: 10.0.0.5\n  weight: -1',
    );
    const problems = problemsOf(input);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/spec\.weight: must be a whole number/);
    expect(problems[1]).toMatch(
      /metadata\.annotations\["istio\.io\/connectedAt"\]: only the registrar/,
    );
  });

  it('accepts other annotations, other istio.io annotations and other conditions', () => {
    const input = `${withAnnotation('istio.io/rev', 'stable')}status:
  conditions:
  - {type: Ready, status: "True"}
`;
    const [document] = parseIstioDocuments(input, { limits: CATALOG_ITEM_LIMITS });
    expect(document?.kind === 'WorkloadEntry' && document.entry.metadata.annotations).toEqual({
      'istio.io/rev': 'stable',
    });
    expect(document?.kind === 'WorkloadEntry' && document.entry.status).toEqual({
      conditions: [{ type: 'Ready', status: 'True' }],
    });
  });

  it('accepts an annotation whose key is an object property name', () => {
    const [document] = parseIstioDocuments(withAnnotation('constructor', 'x'), {
      limits: CATALOG_ITEM_LIMITS,
    });
    expect(document?.kind).toBe('WorkloadEntry');
  });
});

describe('groups', () => {
  it.each([
    'istio.io/autoRegistrationGroup',
    'istio.io/workloadController',
    'istio.io/connectedAt',
    'istio.io/disconnectedAt',
    'proxy.istio.io/health-checks-enabled',
  ])('refuses %s in spec.metadata.annotations, naming the field and the value', (key) => {
    const input = GROUP.replace('{team: payments}', `{team: payments, "${key}": forged}`);
    const problems = problemsOf(input);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(
      new RegExp(
        `^document 1 \\(WorkloadGroup web\\): spec\\.metadata\\.annotations\\["${key.replace(/\./g, '\\.')}"\\]: only the registrar sets this on the entries it creates \\(.+\\); remove the annotation from the group, got 'forged'$`,
      ),
    );
  });

  it('accepts its own annotations and system keys on the group object itself', () => {
    const input = GROUP.replace(
      'metadata: {name: web, namespace: shop}',
      'metadata: {name: web, namespace: shop, annotations: {"istio.io/connectedAt": x}}',
    );
    const [document] = parseIstioDocuments(input, { limits: CATALOG_ITEM_LIMITS });
    expect(document?.kind === 'WorkloadGroup' && document.group.spec.metadata).toEqual({
      annotations: { team: 'payments' },
    });
  });
});
