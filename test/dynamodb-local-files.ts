/**
 * Which test files reach DynamoDB Local in its pass (test/dynamodb-local-suite.ts): those that
 * import, directly or through any chain of imports, the switch in test/fixtures/dynamo.ts
 * (`REGISTRAR_TEST_BACKEND`), or that read the shared endpoint the pass sets
 * (`REGISTRAR_TEST_DYNAMODB_ENDPOINT`). Every other integration or property file starts its
 * own dynalite (an in-memory local runtime, for instance): running it a second time in that
 * pass tests nothing new and cost ~5 minutes of CI.
 *
 * Read from the sources, not listed by hand, so a new test that starts using the fixture is in
 * the pass without anyone remembering to add it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const SWITCH = 'test/fixtures/dynamo.ts';
const ENDPOINT_VARIABLE = 'REGISTRAR_TEST_DYNAMODB_ENDPOINT';
/** Imports and dynamic imports of relative modules: `from './x.ts'`, `import('../y.ts')`. */
const RELATIVE_IMPORT = /(?:from\s+|import\s*\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g;

export const DYNAMODB_SUITES = ['test/integration', 'test/property'] as const;

export function filesReachingDynamoDbLocal(repo: string): string[] {
  // Every module under test/, with the test/ modules it imports.
  const imports = new Map<string, string[]>();
  for (const file of typeScriptFiles(join(repo, 'test'))) {
    const source = readFileSync(file, 'utf8');
    const targets = [...source.matchAll(RELATIVE_IMPORT)].map((m) =>
      resolve(dirname(file), m[1] as string),
    );
    imports.set(file, targets);
  }
  // Backwards from the switch and from the files that read the shared endpoint.
  const reaching = new Set<string>([join(repo, SWITCH)]);
  for (const file of imports.keys()) {
    if (file.endsWith('dynamodb-local-suite.ts')) continue;
    if (readFileSync(file, 'utf8').includes(ENDPOINT_VARIABLE)) reaching.add(file);
  }
  for (let grew = true; grew; ) {
    grew = false;
    for (const [file, targets] of imports) {
      if (!reaching.has(file) && targets.some((target) => reaching.has(target))) {
        reaching.add(file);
        grew = true;
      }
    }
  }
  return DYNAMODB_SUITES.flatMap((suite) =>
    readdirSync(join(repo, suite))
      .filter((name) => name.endsWith('.test.ts') && reaching.has(join(repo, suite, name)))
      .sort()
      .map((name) => `${suite}/${name}`),
  );
}

function typeScriptFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return typeScriptFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}
