import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The layout check `npm run lint` runs (.dependency-cruiser.cjs) against a small tree planted
 * with each kind of import it must refuse, and with the ones it must let through: a check that
 * passes on everything would keep the real tree "clean" too.
 */

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const CONFIG = join(REPO, '.dependency-cruiser.cjs');
// The package's exports hide its package.json and bin; the bin sits in node_modules as usual.
const DEPCRUISE = join(REPO, 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs');

const tree = mkdtempSync(join(tmpdir(), 'dependency-rules-'));
afterAll(() => rmSync(tree, { recursive: true, force: true }));

function plant(files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(tree, path)), { recursive: true });
    writeFileSync(join(tree, path), text);
  }
}

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
}

/** The check's violations over the planted tree, as `rule: from -> to`. */
function violations(): string[] {
  const run = spawnSync(
    process.execPath,
    [
      DEPCRUISE,
      'lib',
      'functions',
      'agent',
      'cli',
      'dashboard',
      'infra',
      '--config',
      CONFIG,
      '--output-type',
      'json',
    ],
    { cwd: tree, encoding: 'utf8', timeout: 60_000 },
  );
  if (run.stdout === '') {
    throw new Error(
      `depcruise printed nothing (${run.status ?? run.signal}, ${String(run.error)}): ${run.stderr}`,
    );
  }
  const result = JSON.parse(run.stdout) as { summary: { violations: Violation[] } };
  return result.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort();
}

describe('the layout check', () => {
  plant({
    'tsconfig.json': JSON.stringify({
      compilerOptions: {
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        allowImportingTsExtensions: true,
        noEmit: true,
      },
    }),
    // Allowed: a deliverable on lib/, lib/ on itself, the local runtime hosting a function.
    'lib/model.ts': 'export type Model = { name: string };\n',
    'lib/rules.ts':
      "import type { Model } from './model.ts';\nexport const ok = (m: Model) => m.name;\n",
    'functions/connect.ts': "import { ok } from '../lib/rules.ts';\nexport const handler = ok;\n",
    'infra/local/runtime.ts':
      "import { handler } from '../../functions/connect.ts';\nexport const run = handler;\n",
    'dashboard/ui/page.ts':
      "import type { Model } from '../../lib/model.ts';\nexport type P = Model;\n",
    'agent/main.ts': "import { ok } from '../lib/rules.ts';\nexport const main = ok;\n",
    // A circle made of type imports only: still two files that cannot be read apart.
    'lib/domain/a.ts': "import type { B } from './b.ts';\nexport type A = { b?: B };\n",
    'lib/domain/b.ts': "import type { A } from './a.ts';\nexport type B = { a?: A };\n",
    // Sideways: a deliverable on another one.
    'cli/commands/dashboard.ts':
      "import { serve } from '../../dashboard/server/start.ts';\nexport const run = serve;\n",
    'dashboard/server/start.ts': 'export const serve = () => 1;\n',
    // The CLI reaching into a function (only the local runtime hosts them).
    'cli/commands/ec2-event.ts':
      "import { handler } from '../../functions/connect.ts';\nexport const run = handler;\n",
    // Allowed inside lib/: a use case on its port in lib/store, the adapter on lib/domain.
    'lib/store/widget-store.ts':
      "import type { Model } from '../domain/model.ts';\nexport interface WidgetStore { get(): Promise<Model> }\n",
    'lib/domain/model.ts': 'export type Model = { name: string };\n',
    'lib/registration/widgets.ts':
      "import type { WidgetStore } from '../store/widget-store.ts';\nexport const read = (s: WidgetStore) => s.get();\n",
    // An adapter importing its port from the use case above it (the arrow issue 45 removed).
    'lib/store/dynamodb-gadgets.ts':
      "import type { GadgetStore } from '../rollout/gadgets.ts';\nexport type G = GadgetStore;\n",
    'lib/rollout/gadgets.ts': 'export interface GadgetStore { count(): Promise<number> }\n',
    // The wire's conversions calling a use case above them.
    'lib/protocol/caller.ts':
      "import type { GadgetStore } from '../rollout/gadgets.ts';\nexport type C = GadgetStore;\n",
    // The domain importing a room above it.
    'lib/domain/rule.ts':
      "import type { WidgetStore } from '../store/widget-store.ts';\nexport type R = WidgetStore;\n",
    // A use case building its own adapters (only lib/wiring composes them).
    'lib/wiring/widgets.ts': 'export const widgets = () => 1;\n',
    'lib/rollout/builds.ts':
      "import { widgets } from '../wiring/widgets.ts';\nexport const built = widgets;\n",
    // lib/ on a deliverable.
    'lib/upward.ts':
      "import { run } from '../cli/commands/dashboard.ts';\nexport const up = run;\n",
  });
  const found = violations();

  it('refuses a circle, even of type imports only', () => {
    expect(found).toContain('no-circular: lib/domain/a.ts -> lib/domain/b.ts');
  });

  it('refuses a sideways import between two deliverables', () => {
    expect(found).toContain('no-sideways: cli/commands/dashboard.ts -> dashboard/server/start.ts');
  });

  it('refuses a function imported by any deliverable but the local runtime', () => {
    expect(found).toContain(
      'no-sideways-into-functions: cli/commands/ec2-event.ts -> functions/connect.ts',
    );
  });

  it('refuses lib/ importing a deliverable', () => {
    expect(found).toContain('lib-stands-alone: lib/upward.ts -> cli/commands/dashboard.ts');
  });

  it('refuses an adapter in lib/store importing its port from a use case above it', () => {
    expect(found).toContain(
      'store-below-use-cases: lib/store/dynamodb-gadgets.ts -> lib/rollout/gadgets.ts',
    );
  });

  it('refuses lib/protocol importing a use case', () => {
    expect(found).toContain(
      'protocol-below-use-cases: lib/protocol/caller.ts -> lib/rollout/gadgets.ts',
    );
  });

  it('refuses lib/domain importing another room of lib/', () => {
    expect(found).toContain('domain-stands-alone: lib/domain/rule.ts -> lib/store/widget-store.ts');
  });

  it('refuses a use case importing the wiring', () => {
    expect(found).toContain(
      'only-entry-points-wire: lib/rollout/builds.ts -> lib/wiring/widgets.ts',
    );
  });

  it('lets a deliverable stand on lib/, the local runtime host a function, and a use case its port', () => {
    // Exactly the planted faults: nothing that stands on lib/, nor a use case on its port in
    // lib/store, nor an adapter on lib/domain, is refused.
    expect(found).toEqual([
      'domain-stands-alone: lib/domain/rule.ts -> lib/store/widget-store.ts',
      'lib-stands-alone: lib/upward.ts -> cli/commands/dashboard.ts',
      'no-circular: lib/domain/a.ts -> lib/domain/b.ts',
      'no-sideways-into-functions: cli/commands/ec2-event.ts -> functions/connect.ts',
      'no-sideways: cli/commands/dashboard.ts -> dashboard/server/start.ts',
      'only-entry-points-wire: lib/rollout/builds.ts -> lib/wiring/widgets.ts',
      'protocol-below-use-cases: lib/protocol/caller.ts -> lib/rollout/gadgets.ts',
      'store-below-use-cases: lib/store/dynamodb-gadgets.ts -> lib/rollout/gadgets.ts',
    ]);
  });
});
