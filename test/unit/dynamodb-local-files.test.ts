import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { filesReachingDynamoDbLocal } from '../dynamodb-local-files.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
let scratch: string | undefined;

afterEach(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
  scratch = undefined;
});

async function tree(files: Record<string, string>): Promise<string> {
  scratch = await mkdtemp(join(tmpdir(), 'ddb-local-files-'));
  for (const suite of ['test/integration', 'test/property', 'test/fixtures']) {
    await mkdir(join(scratch, suite), { recursive: true });
  }
  for (const [path, source] of Object.entries(files)) {
    await writeFile(join(scratch, path), source);
  }
  return scratch;
}

describe('the files the DynamoDB Local pass runs', () => {
  it('takes a file that imports the backend switch, directly or through fixtures, or reads the endpoint', async () => {
    const repo = await tree({
      'test/fixtures/dynamo.ts': 'export const x = 1;\n',
      'test/fixtures/bed.ts': "import { x } from './dynamo.ts';\n",
      'test/fixtures/outer.ts': "export { y } from './bed.ts';\n",
      'test/integration/direct.test.ts': "import { x } from '../fixtures/dynamo.ts';\n",
      'test/integration/chained.test.ts': "import { y } from '../fixtures/outer.ts';\n",
      'test/integration/lazy.test.ts': "const m = await import('../fixtures/bed.ts');\n",
      'test/property/endpoint.property.test.ts':
        'const e = process.env.REGISTRAR_TEST_DYNAMODB_ENDPOINT;\n',
    });
    expect(filesReachingDynamoDbLocal(repo)).toEqual([
      'test/integration/chained.test.ts',
      'test/integration/direct.test.ts',
      'test/integration/lazy.test.ts',
      'test/property/endpoint.property.test.ts',
    ]);
  });

  it('leaves out a file that starts its own dynalite, even through an import cycle', async () => {
    const repo = await tree({
      'test/fixtures/dynamo.ts': 'export const x = 1;\n',
      'test/fixtures/a.ts': "import { b } from './b.ts';\n",
      'test/fixtures/b.ts': "import { a } from './a.ts';\n",
      'test/integration/own-runtime.test.ts': "import { a } from '../fixtures/a.ts';\n",
    });
    expect(filesReachingDynamoDbLocal(repo)).toEqual([]);
  });

  it('in this repository: the store suites in, the in-memory runtimes out', () => {
    const files = filesReachingDynamoDbLocal(REPO);
    expect(files).toContain('test/integration/entry-events-store.test.ts');
    expect(files).toContain('test/integration/local-runtime.test.ts');
    expect(files).toContain('test/property/lifecycle.property.test.ts');
    expect(files).not.toContain('test/integration/routable-follows-reality.test.ts');
    expect(files).not.toContain('test/integration/istiod-coexistence.test.ts');
  });
});
