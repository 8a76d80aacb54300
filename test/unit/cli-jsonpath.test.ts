import { describe, expect, it } from 'vitest';
import { executeJsonPath, JsonPathError, parseJsonPathTemplate } from '../../cli/jsonpath.ts';

/** kubectl's JSONPath templates, over the shape `get -o json` prints. */
const LIST = {
  apiVersion: 'v1',
  kind: 'List',
  items: [
    {
      metadata: { name: 'web-1', annotations: { 'istio.io/autoRegistrationGroup': 'web' } },
      spec: { address: '10.0.0.1', ports: { http: 8080 } },
      status: { conditions: [{ type: 'Healthy', status: 'True' }] },
    },
    {
      metadata: { name: 'db-1' },
      spec: { address: '10.0.0.5' },
      status: { conditions: [{ type: 'Healthy', status: 'False' }] },
    },
  ],
};

const run = (template: string, data: unknown = LIST) =>
  executeJsonPath(parseJsonPathTemplate(template), data);

describe('JSONPath templates', () => {
  it.each([
    ['{.items[*].metadata.name}', 'web-1 db-1'],
    ['{.items[0].spec.address}', '10.0.0.1'],
    ['{.items[-1].metadata.name}', 'db-1'],
    ['{.items[0:1].metadata.name}', 'web-1'],
    ["{.items[1]['spec']['address']}", '10.0.0.5'],
    ['{$.kind}', 'List'],
    ['{..address}', '10.0.0.1 10.0.0.5'],
    ['{.items[0].spec.ports}', '{"http":8080}'],
    ['{.items[*].spec.ports.http}', '8080'],
    ['{.items[0].metadata.annotations.istio\\.io/autoRegistrationGroup}', 'web'],
    ['{.items[?(@.status.conditions[0].status=="False")].metadata.name}', 'db-1'],
    ['{.items[?(@.spec.ports)].metadata.name}', 'web-1'],
    ['{.items[?(@.spec.ports.http >= 8080)].metadata.name}', 'web-1'],
    ['names: {.items[*].metadata.name}!', 'names: web-1 db-1!'],
    [
      '{range .items[*]}{.metadata.name}{"\\t"}{.spec.address}{"\\n"}{end}',
      'web-1\t10.0.0.1\ndb-1\t10.0.0.5\n',
    ],
    ['{.items[5].metadata.name}', ''],
    ['{.items[0].metadata.missing}', ''],
  ])('%s prints %j', (template, expected) => {
    expect(run(template)).toBe(expected);
  });

  it.each([
    ['{.items[*]', 'unclosed action'],
    ['{range .items[*]}{.metadata.name}', 'without its {end}'],
    ['{end}', 'without a {range'],
    ['{.items[a]}', "expected '*', an index"],
    ['{.items[0,1]}', 'unions ([a,b]) are not supported'],
    ['{.items[?(@.x ~ 1)]}', 'a filter is written'],
  ])('refuses %s, saying %j', (template, message) => {
    expect(() => parseJsonPathTemplate(template)).toThrow(JsonPathError);
    expect(() => parseJsonPathTemplate(template)).toThrow(message);
  });
});
