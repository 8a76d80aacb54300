import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProgram } from '../fixtures/run-program.ts';

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
async function violations(): Promise<string[]> {
  const run = await runProgram(
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
    process.env,
    tree,
  );
  if (run.stdout === '') {
    throw new Error(`depcruise printed nothing (exit ${run.code}): ${run.stderr}`);
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
    // Allowed inside lib/: a use case on its port beside it, the adapter on that port (as a
    // type) and on lib/domain, the wiring building the adapter and handing it to the use case.
    'lib/domain/model.ts': 'export type Model = { name: string };\n',
    'lib/registration/widget-store.ts':
      "import type { Model } from '../domain/model.ts';\nexport interface WidgetStore { get(): Promise<Model> }\n",
    'lib/registration/widgets.ts':
      "import type { WidgetStore } from './widget-store.ts';\nexport const read = (s: WidgetStore) => s.get();\n",
    'lib/store/dynamodb-widgets.ts':
      "import type { Model } from '../domain/model.ts';\nimport type { WidgetStore } from '../registration/widget-store.ts';\nexport class DynamoDbWidgets implements WidgetStore { async get(): Promise<Model> { return { name: 'w' }; } }\n",
    'lib/wiring/read-widgets.ts':
      "import { read } from '../registration/widgets.ts';\nimport { DynamoDbWidgets } from '../store/dynamodb-widgets.ts';\nexport const readWidgets = () => read(new DynamoDbWidgets());\n",
    // lib/dependencies.ts, the whole registry for the local runtime, is wiring too.
    'lib/dependencies.ts':
      "import { DynamoDbWidgets } from './store/dynamodb-widgets.ts';\nexport const widgets = () => new DynamoDbWidgets();\n",
    // A use case reaching into lib/store for an adapter (or a port left there): issue 45's
    // layout before the ports moved beside their use cases.
    'lib/store/gadget-table.ts': 'export const GADGET_TABLE = "gadgets";\n',
    'lib/rollout/gadget-count.ts':
      "import { GADGET_TABLE } from '../store/gadget-table.ts';\nexport const table = GADGET_TABLE;\n",
    // An adapter running a use case's code: it may import its port as a type, nothing else.
    'lib/rollout/gadgets.ts':
      'export interface GadgetStore { count(): Promise<number> }\nexport const GADGET_LIMIT = 10;\n',
    'lib/store/dynamodb-gadgets.ts':
      "import { GADGET_LIMIT, type GadgetStore } from '../rollout/gadgets.ts';\nexport type G = GadgetStore;\nexport const limit = GADGET_LIMIT;\n",
    // The wire's conversions calling a use case above them (the sweeper run's folder too).
    'lib/protocol/caller.ts':
      "import type { GadgetStore } from '../rollout/gadgets.ts';\nexport type C = GadgetStore;\n",
    'lib/sweep/lease-store.ts': 'export interface LeaseStore { acquire(): Promise<boolean> }\n',
    'lib/protocol/tick.ts':
      "import type { LeaseStore } from '../sweep/lease-store.ts';\nexport type T = LeaseStore;\n",
    // The domain importing a room above it.
    'lib/domain/rule.ts':
      "import type { WidgetStore } from '../registration/widget-store.ts';\nexport type R = WidgetStore;\n",
    // A use case building its own adapters (only lib/wiring composes them).
    'lib/wiring/widgets.ts': 'export const widgets = () => 1;\n',
    'lib/rollout/builds.ts':
      "import { widgets } from '../wiring/widgets.ts';\nexport const built = widgets;\n",
    // lib/ on a deliverable.
    'lib/upward.ts':
      "import { run } from '../cli/commands/dashboard.ts';\nexport const up = run;\n",
  });
  let found: string[] = [];
  beforeAll(async () => {
    found = await violations();
  }, 120_000);

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

  it('refuses a use case importing lib/store', () => {
    expect(found).toContain(
      'use-cases-never-import-adapters: lib/rollout/gadget-count.ts -> lib/store/gadget-table.ts',
    );
  });

  it("refuses an adapter importing a use case's code, not only its port's type", () => {
    expect(found).toContain(
      'adapters-import-ports-as-types: lib/store/dynamodb-gadgets.ts -> lib/rollout/gadgets.ts',
    );
  });

  it('refuses lib/protocol importing a use case', () => {
    expect(found).toContain(
      'protocol-below-use-cases: lib/protocol/caller.ts -> lib/rollout/gadgets.ts',
    );
    expect(found).toContain(
      'protocol-below-use-cases: lib/protocol/tick.ts -> lib/sweep/lease-store.ts',
    );
  });

  it('refuses lib/domain importing another room of lib/', () => {
    expect(found).toContain(
      'domain-stands-alone: lib/domain/rule.ts -> lib/registration/widget-store.ts',
    );
  });

  it('refuses a use case importing the wiring', () => {
    expect(found).toContain(
      'only-entry-points-wire: lib/rollout/builds.ts -> lib/wiring/widgets.ts',
    );
  });

  it('lets a deliverable stand on lib/, the local runtime host a function, a use case its port, an adapter the port, and the wiring both', () => {
    // Exactly the planted faults: nothing that stands on lib/, nor a use case on the port
    // beside it, nor an adapter on that port's type and lib/domain, nor the wiring building
    // the adapter for the use case, is refused.
    expect(found).toEqual([
      'adapters-import-ports-as-types: lib/store/dynamodb-gadgets.ts -> lib/rollout/gadgets.ts',
      'domain-stands-alone: lib/domain/rule.ts -> lib/registration/widget-store.ts',
      'lib-stands-alone: lib/upward.ts -> cli/commands/dashboard.ts',
      'no-circular: lib/domain/a.ts -> lib/domain/b.ts',
      'no-sideways-into-functions: cli/commands/ec2-event.ts -> functions/connect.ts',
      'no-sideways: cli/commands/dashboard.ts -> dashboard/server/start.ts',
      'only-entry-points-wire: lib/rollout/builds.ts -> lib/wiring/widgets.ts',
      'protocol-below-use-cases: lib/protocol/caller.ts -> lib/rollout/gadgets.ts',
      'protocol-below-use-cases: lib/protocol/tick.ts -> lib/sweep/lease-store.ts',
      'use-cases-never-import-adapters: lib/rollout/gadget-count.ts -> lib/store/gadget-table.ts',
    ]);
  });
});
