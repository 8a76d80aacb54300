import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { App } from 'aws-cdk-lib';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../agent/clock.ts';
import { buildConnectUrl } from '../../agent/connect-url.ts';
import { openLink, RefusedError } from '../../agent/connection.ts';
import { presignConnectUrl } from '../../agent/sigv4.ts';
import { resolveStackOptions } from '../../infra/stack-options.ts';
import {
  startWalkthrough,
  type Walkthrough,
  walkthroughBlocks,
} from '../fixtures/doc-walkthrough.ts';
import { type RuntimeProcess, startRuntimeProcess } from '../fixtures/local-runtime-process.ts';

/**
 * The docs' recipes as written. What runs locally runs: docs/agent.md's IAM walkthrough
 * (two terminals, `<!-- recipe iam-local: ... -->` blocks, test/fixtures/doc-walkthrough.ts),
 * and every `registrar token create` and `registrar policy allow` the README and docs show in
 * a shell block, each run by the real CLI against a local runtime with the docs' group
 * (examples/web-group.yaml) and then used to connect as the agent does: the connect must
 * register, not be refused. What needs AWS (deploy, IAM, systemd) is checked for consistency
 * with the code: one stage name (the stack's default), one token path (the packaged config's).
 * Every relative link resolves to a file in the repository.
 */

const repo = process.cwd();
const pages = ['README.md', ...readdirSync(join(repo, 'docs')).map((name) => `docs/${name}`)]
  .filter((page) => page.endsWith('.md'))
  .map((page) => ({ page, text: readFileSync(join(repo, page), 'utf8') }));
const run = promisify(execFile);

/** Shell blocks of a page, continuation lines joined. */
function shellCommands(text: string): string[] {
  const commands: string[] = [];
  for (const block of text.matchAll(/```(?:sh|bash)\n([\s\S]*?)\n```/g)) {
    commands.push(...(block[1] ?? '').replace(/\\\n\s*/g, '').split('\n'));
  }
  return commands;
}

/** Every `registrar <verb...>` recipe of README and docs (CLI synopses with `[...]` or NS/ARN placeholders are not recipes). */
function recipes(verb: 'token create' | 'policy allow'): { page: string; args: string[] }[] {
  const found: { page: string; args: string[] }[] = [];
  for (const { page, text } of pages) {
    for (const command of shellCommands(text)) {
      const match = new RegExp(`registrar ${verb}((?: [^|)#]*)?)`).exec(command);
      if (!match) continue;
      const rest = (match[1] ?? '').trim();
      if (/\[|\b(NS|SA|ARN|ID)\b/.test(rest)) continue;
      // `--table <TableName>` names the deployed table; here the local one is the target.
      const args = rest
        .replace(/--table \S+/, '')
        .trim()
        .split(/\s+/)
        .filter(Boolean);
      found.push({ page, args });
    }
  }
  return found;
}

async function cli(dataDir: string, args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, ['bin/registrar.js', ...args], {
    env: { ...process.env, REGISTRAR_DATA_DIR: dataDir },
  });
  return stdout;
}

/** One connect as the agent makes it (its own URL builder, signer and connection code). */
async function connectOnce(
  runtimeUrl: string,
  ip: string,
  auth: { token: string } | { accessKeyId: string; secretAccessKey: string },
): Promise<'registered' | RefusedError> {
  let url = buildConnectUrl(runtimeUrl, { group: 'web', namespace: 'shop', ips: [ip], labels: {} });
  const headers: Record<string, string> = {};
  if ('token' in auth) headers.authorization = `Bearer ${auth.token}`;
  else url = await presignConnectUrl(url, { region: 'us-east-1', credentials: auth });
  try {
    const link = await openLink(url, headers, {
      clock: systemClock,
      connectTimeoutMs: 10_000,
      replyTimeoutMs: 5_000,
    });
    await link.close('done');
    return 'registered';
  } catch (error) {
    if (error instanceof RefusedError) return error;
    throw error;
  }
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('docs/agent.md: trying IAM mode locally', () => {
  let walkthrough: Walkthrough | undefined;
  afterAll(async () => {
    await walkthrough?.close();
  });

  it('prints, block by block, what the recipe shows', { timeout: 180_000 }, async () => {
    const page = pages.find((p) => p.page === 'docs/agent.md')?.text ?? '';
    const blocks = walkthroughBlocks(page, 'recipe iam-local');
    expect(blocks.map((block) => block.kind)).toContain('run 1');
    // The group comes from examples/web-group.yaml, probe port 9080 and all; nothing listens.
    walkthrough = await startWalkthrough(repo, { probePort: false });
    await walkthrough.run(blocks, 'docs/agent.md');
  });

  it('leaves nothing in the checkout that git would show as untracked', async () => {
    const created = walkthrough?.created() ?? [];
    expect(created).toContain('.registrar-iam/');
    for (const name of created) {
      // --no-index: the copy's files are not in the index; exit 0 means ignored.
      const ignored = await run('git', ['-C', repo, 'check-ignore', '-q', '--no-index', name]).then(
        () => true,
        () => false,
      );
      expect(ignored, `${name} is ignored by .gitignore`).toBe(true);
    }
  });
});

describe('token and policy recipes', () => {
  it('every join token the docs create registers the docs’ group (it names service account web)', {
    timeout: 120_000,
  }, async () => {
    const found = recipes('token create');
    expect(found.map((r) => r.page)).toEqual(
      expect.arrayContaining(['README.md', 'docs/agent.md', 'docs/deploy.md']),
    );
    const dataDir = mkdtempSync(join(tmpdir(), 'registrar-docs-tokens-'));
    const runtime: RuntimeProcess = await startRuntimeProcess(['--data-dir', dataDir]);
    cleanups.push(async () => {
      await runtime.stop();
      rmSync(dataDir, { recursive: true, force: true });
    });
    await cli(dataDir, ['apply', '-f', 'examples/web-group.yaml']);

    // The refusing case the recipes used to hit: a token of the namespace alone.
    const bare = (await cli(dataDir, ['token', 'create', '-n', 'shop'])).trim();
    const refused = await connectOnce(runtime.url, '10.0.9.1', { token: bare });
    expect(refused).toBeInstanceOf(RefusedError);
    expect((refused as RefusedError).status).toBe(403);

    for (const [index, { page, args }] of found.entries()) {
      const token = (await cli(dataDir, ['token', 'create', ...args])).trim();
      const outcome = await connectOnce(runtime.url, `10.0.9.${index + 10}`, { token });
      expect(outcome, `${page}: registrar token create ${args.join(' ')}`).toBe('registered');
    }
  });

  it('every IAM policy the docs allow registers the docs’ group for that role', {
    timeout: 120_000,
  }, async () => {
    const found = recipes('policy allow');
    expect(found.map((r) => r.page)).toEqual(
      expect.arrayContaining(['docs/agent.md', 'docs/deploy.md']),
    );
    // One local caller per role the docs name: a session of that role, with made-up keys.
    const roles = [...new Set(found.map((r) => r.args[r.args.indexOf('--role-arn') + 1] ?? ''))];
    const callers = roles.map((role, index) => {
      const [, account, name] = /^arn:aws:iam::(\d+):role\/(.+)$/.exec(role) ?? [];
      return {
        role,
        accessKeyId: `AKIDDOCS${index}`,
        secretAccessKey: `docs-secret-${index}`,
        arn: `arn:aws:sts::${account}:assumed-role/${name}/i-0docs`,
      };
    });
    const dataDir = mkdtempSync(join(tmpdir(), 'registrar-docs-policies-'));
    const callersFile = join(dataDir, 'callers.json');
    writeFileSync(callersFile, JSON.stringify(callers.map(({ role: _, ...caller }) => caller)));
    const runtime = await startRuntimeProcess([
      '--data-dir',
      join(dataDir, 'registry'),
      '--auth-mode',
      'iam',
      '--iam-callers',
      callersFile,
      // The callers send no instance identity document.
      '--instance-attestation',
      'optional',
    ]);
    cleanups.push(async () => {
      await runtime.stop();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const registry = join(dataDir, 'registry');
    await cli(registry, ['apply', '-f', 'examples/web-group.yaml']);

    for (const [index, { page, args }] of found.entries()) {
      const caller = callers.find((c) => args.includes(c.role));
      if (!caller) throw new Error(`${page}: no --role-arn in ${args.join(' ')}`);
      const ip = `10.0.8.${index + 10}`;
      // The refusing case the recipes used to hit: the role allowed for the namespace alone.
      await cli(registry, ['policy', 'allow', '--role-arn', caller.role, '-n', 'shop']);
      const refused = await connectOnce(runtime.url, ip, caller);
      expect((refused as RefusedError).status, `${page}: without --service-account`).toBe(403);

      await cli(registry, ['policy', 'allow', ...args]);
      const outcome = await connectOnce(runtime.url, ip, caller);
      expect(outcome, `${page}: registrar policy allow ${args.join(' ')}`).toBe('registered');
      // No connection is left to close: the revoke need not look again for connects in flight.
      await cli(registry, [
        'policy',
        'revoke',
        '--role-arn',
        caller.role,
        '-n',
        'shop',
        '--settle',
        '0',
      ]);
    }
  });
});

describe('one name for each thing across the docs', () => {
  const texts = [
    ...pages,
    ...['packaging/agent.example.yaml', 'packaging/registrar-agent.service'].map((page) => ({
      page,
      text: readFileSync(join(repo, page), 'utf8'),
    })),
  ];

  it('every execute-api URL ends in the stack’s default stage', () => {
    const stage = resolveStackOptions(new App().node).stageName;
    for (const { page, text } of texts) {
      for (const match of text.matchAll(
        /execute-api[.:][^\s`'")]*?(?:amazonaws\.com|:\$?\w+)\/(\w+)/g,
      )) {
        expect(match[1], `${page}: ${match[0]}`).toBe(stage);
      }
    }
  });

  it('every join token file is the packaged configuration’s', () => {
    const packaged = /tokenFile: (\S+)/.exec(
      readFileSync(join(repo, 'packaging/agent.example.yaml'), 'utf8'),
    )?.[1];
    expect(packaged).toBe('/etc/registrar-agent/token');
    for (const { page, text } of texts) {
      for (const match of text.matchAll(/(?:--token-file|tokenFile:)\s+(\/[^\s`]+)/g)) {
        expect(match[1], `${page}: ${match[0]}`).toBe(packaged);
      }
      for (const match of text.matchAll(/\/etc\/registrar[^\s`/]*\/token\b/g)) {
        expect(match[0], page).toBe(packaged);
      }
    }
  });
});

describe('links', () => {
  /** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
  const anchor = (heading: string) =>
    heading
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');

  it('every relative link in README.md and docs/ resolves to a file in the repository', () => {
    const broken: string[] = [];
    for (const { page, text } of pages) {
      for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1] ?? '';
        if (/^[a-z]+:/i.test(target)) continue;
        const [path = '', hash] = target.split('#');
        const file = path === '' ? join(repo, page) : resolve(dirname(join(repo, page)), path);
        if (relative(repo, file).startsWith('..') || !existsSync(file)) {
          broken.push(`${page}: ${target} (no such file in the repository)`);
          continue;
        }
        if (hash && file.endsWith('.md')) {
          const headings = [...readFileSync(file, 'utf8').matchAll(/^#+ (.+)$/gm)].map((h) =>
            anchor(h[1] ?? ''),
          );
          if (!headings.includes(hash)) broken.push(`${page}: ${target} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('names no file outside the repository, and every repository path it names exists', () => {
    const problems: string[] = [];
    for (const { page, text } of pages) {
      for (const match of text.matchAll(/(?<![\w.])\/(?:work|home|root|Users)\/[^\s`)]+/g)) {
        problems.push(`${page}: ${match[0]} (a path on someone's machine)`);
      }
      for (const match of text.matchAll(
        /`((?:agent|bench|bin|cli|docs|examples|functions|infra|lib|packaging|scripts|test)\/[\w./-]+\.\w+)`/g,
      )) {
        if (!existsSync(join(repo, match[1] ?? ''))) problems.push(`${page}: ${match[1]}`);
      }
    }
    expect(problems).toEqual([]);
  });
});
