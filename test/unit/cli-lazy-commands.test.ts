import { execFile } from 'node:child_process';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createContext } from '../../cli/commands/context.ts';
import { COMMANDS } from '../../cli/commands/index.ts';
import { buildProgram } from '../../cli/main.ts';

/**
 * Each command's module is loaded only when the command line names it (issue 17: the CLI's
 * start-up). What `--help` lists of the commands it did not load must be what loading them
 * would list, and what a command line loads is checked on the real CLI's process.
 */

const run = promisify(execFile);
const bin = new URL('../../bin/registrar.js', import.meta.url).pathname;
const hook = new URL('../fixtures/loaded-modules-hook.ts', import.meta.url).pathname;

function context() {
  return createContext({
    stdout: { write: () => true },
    stderr: { write: () => true },
    stdin: Readable.from(['']),
    env: {},
    cwd: '.',
  });
}

/** The URLs of the modules `registrar <args>` loaded. */
async function loadedModules(args: string[]): Promise<string[]> {
  const result = await run(process.execPath, ['--import', hook, bin, ...args], {
    env: {
      ...process.env,
      REGISTRAR_TABLE: 'none',
      REGISTRAR_DYNAMODB_ENDPOINT: 'http://127.0.0.1:9',
    },
  }).catch((error: { stderr: string }) => error);
  const urls = result.stderr.split('loaded-modules:\n')[1]?.split('\n') ?? [];
  expect(urls.length).toBeGreaterThan(3);
  return urls;
}

/** The packages (or `project`) of the modules `registrar <args>` loaded. */
async function loadedPackages(args: string[]): Promise<Set<string>> {
  const urls = await loadedModules(args);
  return new Set(
    urls.map((url) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ?? 'project'),
  );
}

describe('registrar --help', () => {
  it('lists every command as loading all of them would, without loading any', async () => {
    const lazy = await buildProgram(context(), ['--help']);
    const full = await buildProgram(context());
    expect(lazy.helpInformation()).toBe(full.helpInformation());
    // A stub has no options of its own: none of the commands was loaded.
    for (const command of lazy.commands) expect(command.options).toEqual([]);
  });

  it.each(COMMANDS.filter((entry) => !entry.needsAll).map((entry) => entry.name))(
    'loads %s alone when the command line names it',
    async (name) => {
      const program = await buildProgram(context(), ['--table', 't', name, '--help']);
      const loaded = program.commands.filter(
        (command) => command.options.length > 0 || command.commands.length > 0,
      );
      expect(loaded.map((command) => command.name())).toEqual([name]);
    },
  );

  it('loads every command for completion, which reads the whole tree', async () => {
    const program = await buildProgram(context(), ['complete', '--', 'get', '']);
    const get = program.commands.find((command) => command.name() === 'get');
    expect(get?.options.length).toBeGreaterThan(0);
  });

  it('loads the command that `help <command>` asks about', async () => {
    const program = await buildProgram(context(), ['help', 'describe']);
    expect(program.commands.find((c) => c.name() === 'describe')?.options.length).toBeGreaterThan(
      0,
    );
  });

  it('loads neither the AWS SDK, zod nor yaml', async () => {
    const packages = await loadedPackages(['--help']);
    expect([...packages].sort()).toEqual(['commander', 'project']);
  });
});

describe('registrar get', () => {
  it('loads the DynamoDB client, and no yaml, Kubernetes client, middy or Powertools', async () => {
    const packages = [...(await loadedPackages(['get', 'we', '-A']))];
    expect(packages).toContain('@aws-sdk/client-dynamodb');
    expect(
      packages.filter((name) =>
        /^(yaml|@kubernetes\/|@middy\/|@aws-lambda-powertools\/)/.test(name),
      ),
    ).toEqual([]);
  });

  it("lists with the catalog's code alone, not the registration store's", async () => {
    const modules = await loadedModules(['get', 'we', '-A']);
    expect(modules.some((url) => url.endsWith('/lib/store/dynamodb-catalog.ts'))).toBe(true);
    expect(
      modules.filter((url) => /dynamodb-(registry|token|sweep-policy)-store\.ts$/.test(url)),
    ).toEqual([]);
  });
});
