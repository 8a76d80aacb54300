import { describe, expect, it } from 'vitest';
import {
  formatPath,
  InvalidDocumentsError,
  parseIstioDocuments,
} from '../../lib/protocol/istio-documents.ts';
import { CATALOG_ITEM_LIMITS } from '../../lib/store/catalog-item-limits.ts';

const GROUP = `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata:
  name: web
spec:
  metadata:
    labels: {app: web}
  template:
    ports: {http: 8080}
    serviceAccount: web
  probe:
    httpGet: {path: /ready, port: 8080}
    periodSeconds: 5
`;

const ENTRY = `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata:
  name: db-1
  namespace: data
spec:
  address: 10.0.0.5
  labels: {app: db}
`;

/** The problems an input is refused with; fails the test when it is accepted. */
function problemsOf(input: string, namespace?: string): string[] {
  try {
    parseIstioDocuments(input, {
      limits: CATALOG_ITEM_LIMITS,
      ...(namespace === undefined ? {} : { namespace }),
    });
  } catch (error) {
    if (error instanceof InvalidDocumentsError) return error.problems;
    throw error;
  }
  throw new Error('the input was accepted');
}

function group(overrides: string): string {
  return `${GROUP}${overrides}`;
}

describe('parseIstioDocuments', () => {
  it('reads a group and a hand-made entry from one multi-document YAML input', () => {
    const documents = parseIstioDocuments(`${GROUP}---\n${ENTRY}---\n`, {
      limits: CATALOG_ITEM_LIMITS,
    });

    expect(documents.map((d) => d.kind)).toEqual(['WorkloadGroup', 'WorkloadEntry']);
    const [first, second] = documents;
    expect(first?.kind === 'WorkloadGroup' && first.group).toEqual({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'web', namespace: 'default' },
      spec: {
        metadata: { labels: { app: 'web' } },
        template: { ports: { http: 8080 }, serviceAccount: 'web' },
        probe: { httpGet: { path: '/ready', port: 8080 }, periodSeconds: 5 },
      },
    });
    expect(second?.kind === 'WorkloadEntry' && second.entry.metadata).toEqual({
      name: 'db-1',
      namespace: 'data',
    });
  });

  it.each(['networking.istio.io/v1beta1', 'networking.istio.io/v1alpha3'])(
    'accepts apiVersion %s and stores the current version',
    (apiVersion) => {
      const [document] = parseIstioDocuments(GROUP.replace('networking.istio.io/v1', apiVersion), {
        limits: CATALOG_ITEM_LIMITS,
      });
      expect(document?.kind === 'WorkloadGroup' && document.group.apiVersion).toBe(
        'networking.istio.io/v1',
      );
    },
  );

  it('reads JSON', () => {
    const json = JSON.stringify({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: { name: 'db-2' },
      spec: { address: '10.0.0.6' },
    });
    const [document] = parseIstioDocuments(json, { limits: CATALOG_ITEM_LIMITS });
    expect(document?.kind === 'WorkloadEntry' && document.entry.spec).toEqual({
      address: '10.0.0.6',
    });
  });

  it('reads back a List as `get -o yaml` prints it, dropping server-set metadata', () => {
    const list = `apiVersion: v1
kind: List
items:
  - apiVersion: networking.istio.io/v1
    kind: WorkloadGroup
    metadata: {name: web, namespace: shop, uid: 5f1c, generation: 3, resourceVersion: "7"}
    spec: {template: {}}
`;
    const [document] = parseIstioDocuments(list, { limits: CATALOG_ITEM_LIMITS });
    expect(document?.kind === 'WorkloadGroup' && document.group.metadata).toEqual({
      name: 'web',
      namespace: 'shop',
    });
  });

  it('refuses a port that is not a number, naming the document, the field and the value', () => {
    const input = `${ENTRY}---\n${GROUP.replace('http: 8080', 'http: eighty')}`;
    expect(problemsOf(input)).toEqual([
      "document 2 (WorkloadGroup web): spec.template.ports.http: must be a port number 1-65535, got 'eighty'",
    ]);
  });

  it('refuses a port out of range', () => {
    expect(problemsOf(GROUP.replace('http: 8080', 'http: 70000'))).toEqual([
      'document 1 (WorkloadGroup web): spec.template.ports.http: must be a port number 1-65535, got 70000',
    ]);
  });

  it('refuses label keys and values that Kubernetes would refuse', () => {
    const problems = problemsOf(
      GROUP.replace('labels: {app: web}', 'labels: {"bad key": web, tier: "-front"}'),
    );
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(
      /^document 1 \(WorkloadGroup web\): spec\.metadata\.labels\["bad key"\]: invalid label key: .*got 'bad key'$/,
    );
    expect(problems[1]).toMatch(
      /^document 1 \(WorkloadGroup web\): spec\.metadata\.labels\.tier: must be a label value: .*got '-front'$/,
    );
  });

  it('accepts a prefixed label key', () => {
    const documents = parseIstioDocuments(
      GROUP.replace('labels: {app: web}', 'labels: {app.kubernetes.io/name: web}'),
      { limits: CATALOG_ITEM_LIMITS },
    );
    expect(documents).toHaveLength(1);
  });

  it('refuses a name that is not a DNS-1123 subdomain', () => {
    expect(problemsOf(ENTRY.replace('name: db-1', 'name: DB_1'))[0]).toMatch(
      /^document 1 \(WorkloadEntry DB_1\): metadata\.name: must be a DNS-1123 subdomain .*got 'DB_1'$/,
    );
  });

  it('refuses a misspelt field instead of dropping it', () => {
    expect(problemsOf(group('  templte: {}\n'))).toEqual([
      'document 1 (WorkloadGroup web): spec.templte: unknown field',
    ]);
  });

  it('refuses an address in a group template', () => {
    expect(
      problemsOf(
        GROUP.replace('serviceAccount: web', 'serviceAccount: web\n    address: 10.0.0.1'),
      )[0],
    ).toMatch(/spec\.template\.address: must not be set in a WorkloadGroup template/);
  });

  it('refuses a probe with two handlers', () => {
    const probe = 'tcpSocket: {port: 8080}\n    exec: {command: [/bin/true]}';
    expect(problemsOf(GROUP.replace('httpGet: {path: /ready, port: 8080}', probe))).toEqual([
      'document 1 (WorkloadGroup web): spec.probe: must set exactly one of httpGet, tcpSocket, exec, got tcpSocket, exec',
    ]);
  });

  it('refuses a probe with no handler', () => {
    expect(
      problemsOf(GROUP.replace('httpGet: {path: /ready, port: 8080}', 'timeoutSeconds: 1')),
    ).toEqual([
      'document 1 (WorkloadGroup web): spec.probe: must set exactly one of httpGet, tcpSocket, exec, got none',
    ]);
  });

  it('refuses an exec command that is not a list of strings', () => {
    const probe = 'exec: {command: [true]}';
    expect(problemsOf(GROUP.replace('httpGet: {path: /ready, port: 8080}', probe))).toEqual([
      'document 1 (WorkloadGroup web): spec.probe.exec.command[0]: must be a string, got true',
    ]);
  });

  it('refuses a hand-made entry that claims a group, so the sweeper never deletes what an operator made', () => {
    const input = ENTRY.replace(
      'namespace: data',
      'namespace: data\n  annotations: {istio.io/autoRegistrationGroup: web}',
    );
    expect(problemsOf(input)).toEqual([
      `document 1 (WorkloadEntry db-1): metadata.annotations["istio.io/autoRegistrationGroup"]: only auto-registration sets this (entries of a group are created when its VMs connect); remove the annotation to add a hand-made entry, got 'web'`,
    ]);
  });

  it('refuses an entry address that is neither an IP nor a DNS name', () => {
    // An address with a port is IP-shaped: the agent's words for it.
    expect(problemsOf(ENTRY.replace('10.0.0.5', '"10.0.0.5:80"'))[0]).toMatch(
      /spec\.address: must be an IPv4 or IPv6 address, got '10\.0\.0\.5:80'$/,
    );
    expect(problemsOf(ENTRY.replace('10.0.0.5', 'Db_Host'))[0]).toMatch(
      /spec\.address: must be an IP address, a DNS name or a unix:\/\/ socket path, got 'Db_Host'$/,
    );
  });

  it.each([
    ['10.0.0.300', "spec.address: must be an IPv4 or IPv6 address, got '10.0.0.300'"],
    [
      '127.0.0.1',
      'spec.address: is a loopback address; give an address other hosts reach this VM at',
    ],
    [
      '169.254.169.254',
      'spec.address: is a link-local address (the instance metadata service); give an address other hosts reach this VM at',
    ],
    ['"fe80::1%eth0"', 'spec.address: must be an IPv4 or IPv6 address'],
  ])(
    'holds an IP-shaped address %s to the rules and words an agent address gets',
    (value, problem) => {
      const [found] = problemsOf(ENTRY.replace('10.0.0.5', value));
      expect(found).toContain(problem);
    },
  );

  it.each(['10.0.0.6', '2001:db8::1', 'db.internal.example', 'unix:///var/run/db.sock'])(
    'accepts the address %s',
    (value) => {
      expect(() =>
        parseIstioDocuments(ENTRY.replace('10.0.0.5', `"${value}"`), {
          limits: CATALOG_ITEM_LIMITS,
        }),
      ).not.toThrow();
    },
  );

  it('refuses other kinds and API versions', () => {
    const input = `apiVersion: v1\nkind: Service\nmetadata: {name: web}\n---\n${ENTRY.replace('networking.istio.io/v1', 'networking.istio.io/v2')}`;
    expect(problemsOf(input)).toEqual([
      "document 1 (Service web): kind: must be WorkloadGroup or WorkloadEntry, got 'Service'",
      "document 2 (WorkloadEntry db-1): apiVersion: must be one of networking.istio.io/v1, networking.istio.io/v1beta1, networking.istio.io/v1alpha3, got 'networking.istio.io/v2'",
    ]);
  });

  it('names the document that is not YAML and still checks the others', () => {
    const problems = problemsOf(`${GROUP.replace('http: 8080', 'http: 0')}---\nspec: [\n`);
    expect(problems[0]).toMatch(/^document 1 \(WorkloadGroup web\): spec\.template\.ports\.http/);
    expect(problems[1]).toMatch(/^document 2: not valid YAML or JSON: .*line \d+, column \d+$/);
  });

  it('refuses a missing name', () => {
    expect(
      problemsOf(
        'apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata: {}\nspec: {}\n',
      ),
    ).toEqual(['document 1 (WorkloadEntry <unnamed>): metadata.name: is required']);
  });

  it('refuses a document in another namespace than the command names', () => {
    expect(problemsOf(ENTRY, 'shop')[0]).toBe(
      "document 1 (WorkloadEntry db-1): metadata.namespace: is 'data' but the command names namespace 'shop'; pass -n data or remove the namespace from the document",
    );
  });

  it('puts documents without a namespace into the one the command names', () => {
    const [document] = parseIstioDocuments(GROUP, {
      namespace: 'shop',
      limits: CATALOG_ITEM_LIMITS,
    });
    expect(document?.kind === 'WorkloadGroup' && document.group.metadata.namespace).toBe('shop');
  });

  it('refuses the same object twice in one input', () => {
    expect(problemsOf(`${GROUP}---\n${GROUP}`)).toEqual([
      'document 2 (WorkloadGroup web): duplicates document 1',
    ]);
  });

  it('refuses an empty input', () => {
    expect(problemsOf('# nothing here\n')).toEqual(['no documents in the input']);
  });
});

describe('formatPath', () => {
  it('quotes keys that are not identifiers and indexes lists', () => {
    expect(formatPath(['metadata', 'labels', 'app.kubernetes.io/name'])).toBe(
      'metadata.labels["app.kubernetes.io/name"]',
    );
    expect(formatPath(['spec', 'probe', 'exec', 'command', 0])).toBe('spec.probe.exec.command[0]');
  });
});
