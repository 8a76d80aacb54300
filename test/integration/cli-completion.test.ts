import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { type BashCompleter, bashCompleter } from '../fixtures/bash-completion.ts';
import { captureCli } from '../fixtures/cli-run.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * `registrar completion bash` completing what the registry holds: the real CLI under a real bash
 * (test/fixtures/bash-completion.ts), the registry in the test store. The words that need no
 * registry, and the zsh and fish scripts: test/integration/cli-completion-words.test.ts.
 */

let dynamo: TestDynamo;
let bash: BashCompleter;

beforeAll(async () => {
  dynamo = await startTestDynamo();
  const registry = {
    REGISTRAR_DYNAMODB_ENDPOINT: dynamo.endpoint,
    REGISTRAR_TABLE: dynamo.tableName,
  };
  bash = await bashCompleter(registry);
  const groups = ['shop', 'blog']
    .map(
      (ns) =>
        `apiVersion: networking.istio.io/v1\nkind: WorkloadGroup\nmetadata: {name: web, namespace: ${ns}}\nspec: {template: {ports: {http: 80}}}\n`,
    )
    .join('---\n');
  expect((await captureCli(['apply', '-f', '-'], { env: registry, stdin: groups })).code).toBe(0);
  const store = composeRegistry(dynamo.client, dynamo.tableName);
  for (const name of ['web-10.0.0.1', 'web-10.0.0.2']) {
    await store.connect(
      connectChange({ name, namespace: 'shop', connectionId: name, connectedAt: 1 }),
    );
  }
});

afterAll(async () => {
  await bash?.close();
  await dynamo?.close();
});

// Each completion starts `registrar complete`: on a busy machine a few seconds each.
describe('registrar completion bash: what the registry holds', { timeout: 120_000 }, () => {
  it('completes the names of the namespace the line names', async () => {
    expect(await bash.completes('registrar get we -n shop ')).toEqual([
      'web-10.0.0.1',
      'web-10.0.0.2',
    ]);
    expect(await bash.completes('registrar describe we web-10.0.0.2 -n shop web-10.0.0.')).toEqual([
      'web-10.0.0.1',
      'web-10.0.0.2',
    ]);
    expect(await bash.completes('registrar delete wg -n blog ')).toEqual(['web']);
    expect(await bash.completes('registrar get we -n blog ')).toEqual([]);
  });

  it("completes a rollout's group as wg/NAME, or its name after a separate wg", async () => {
    expect(await bash.completes('registrar rollout status -n shop wg/')).toEqual(['wg/web']);
    expect(await bash.completes('registrar rollout pause -n blog ')).toEqual(['wg', 'wg/web']);
    expect(await bash.completes('registrar rollout resume wg -n shop ')).toEqual(['web']);
  });

  it('completes namespaces after -n, and the formats of -o', async () => {
    expect(await bash.completes('registrar get we -n ')).toEqual(['blog', 'shop']);
    expect(await bash.completes('registrar token list -n s')).toEqual(['shop']);
    expect(await bash.completes('registrar get we -o ')).toEqual([
      'wide',
      'name',
      'json',
      'yaml',
      'jsonpath=',
      'go-template=',
      'go-template-file=',
      'custom-columns=',
      'custom-columns-file=',
    ]);
    expect(await bash.completes('registrar sweep status -o y')).toEqual(['yaml']);
  });

  it('still completes when the script is sourced twice (a second source ~/.bashrc)', async () => {
    expect(await bash.completes('registrar de', { sourceTwice: true })).toEqual([
      'describe',
      'delete',
    ]);
  });
});
