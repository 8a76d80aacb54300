import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * README.md's quick start, run as a user runs it, and compared with what the README says they
 * will see. Every fenced block of the section carries an HTML comment saying what it is:
 *
 * - `run in terminal 1`: `npm start`, run as such (npm and all) in its own process group, as a
 *   terminal runs a foreground command; the test ends it as Ctrl-C does (SIGINT to the group).
 * - `run in terminal 2`: shell commands, written to one long-lived `bash` (so `export`, `&`
 *   and `kill %1` mean what they mean in a terminal), each block as written.
 * - `output of terminal 1`: the next lines terminal 1 prints (waited for, with a deadline).
 * - `output of terminal 2`: everything the last terminal-2 block printed, exactly. A block
 *   with no output block after it must print nothing.
 * - `agent log`: the next lines the background agent prints to terminal 2 (waited for).
 * - `setup`: not run (`npm ci`, `npm test`: this test is part of them).
 *
 * It runs in a temporary copy of the checkout (a directory of symlinks to the repository's
 * files, so `npm start`, `npx registrar` and `node bin/registrar-agent.js` resolve as in the
 * checkout, and `.registrar/` and `web.yaml` land in the copy). Adjusted, and nothing else:
 * the gateway port 8080 and the probe port 9080 become free ports (8080 via REGISTRAR_PORT,
 * so `npm start` runs unchanged), and these normalisations before comparing: the agent's ISO
 * timestamps, the console's HH:MM:SS, connection IDs, the AGE column, the DynamoDB port, and
 * npm's `npm warn` lines about the machine's own npm configuration.
 */

const repo = process.cwd();
const readme = readFileSync(join(repo, 'README.md'), 'utf8');

type BlockKind = 'setup' | 'run 1' | 'run 2' | 'output 1' | 'output 2' | 'agent log';
interface Block {
  kind: BlockKind;
  text: string;
  line: number;
}

const KINDS: Record<string, BlockKind> = {
  setup: 'setup',
  'run in terminal 1': 'run 1',
  'run in terminal 2': 'run 2',
  'output of terminal 1': 'output 1',
  'output of terminal 2': 'output 2',
  'agent log': 'agent log',
};

/** The quick start's fenced blocks, each with the marker comment just above it. */
function quickStartBlocks(markdown: string): Block[] {
  const start = markdown.indexOf('\n## Quick start\n');
  if (start < 0) throw new Error('README.md has no "## Quick start" section');
  const end = markdown.indexOf('\n## ', start + 1);
  const lines = markdown.slice(start, end < 0 ? undefined : end).split('\n');
  const firstLine = markdown.slice(0, start).split('\n').length;
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i]?.startsWith('```')) continue;
    const open = i;
    let close = open + 1;
    while (close < lines.length && lines[close] !== '```') close++;
    const marker = lines[open - 1] ?? '';
    const found = /^<!-- quickstart: ([a-z0-9 ]+?)(?: \(.*\))? -->$/.exec(marker);
    const kind = found?.[1] ? KINDS[found[1].trim()] : undefined;
    if (!kind) {
      throw new Error(
        `README.md line ${firstLine + open}: a quick-start block without a known ` +
          `'<!-- quickstart: ... -->' marker above it (${Object.keys(KINDS).join(', ')})`,
      );
    }
    blocks.push({ kind, text: lines.slice(open + 1, close).join('\n'), line: firstLine + open });
    i = close;
  }
  return blocks;
}

const AGENT_LINE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z (DEBUG|INFO|WARN|ERROR) /;

function normalise(text: string): string {
  return text
    .split('\n')
    .map((line) =>
      line
        .replace(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z /, '<time> ')
        .replace(/^\d\d:\d\d:\d\d /, '<time> ')
        .replace(/connection [A-Za-z0-9_+/=-]{8,}\)/g, 'connection <id>)')
        .replace(/(DynamoDB:\s+http:\/\/127\.0\.0\.1:)\d+/, '$1<port>')
        // AGE, the last column of `get`: its value changes, the padding before it does not.
        .replace(/(\S {3,})\d+[smhd](\d+[smhd])?$/, '$1<age>'),
    )
    .join('\n');
}

/** A command's whole output, normalised, without the blank lines around it. */
function normaliseOutput(text: string): string {
  return normalise(text).replace(/^\n+|\n+$/g, '');
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Lines a process prints, with a cursor: each expected block consumes the next lines. */
class LineStream {
  private buffer = '';
  readonly lines: string[] = [];
  cursor = 0;
  push(chunk: string): void {
    this.buffer += chunk;
    const parts = this.buffer.split('\n');
    this.buffer = parts.pop() ?? '';
    this.lines.push(...parts);
  }
  /** Waits until the next lines, normalised, are `expected`; fails with what came instead. */
  async expectNext(expected: string, what: string, timeoutMs: number): Promise<void> {
    const want = normalise(expected).split('\n');
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const got = this.lines.slice(this.cursor, this.cursor + want.length);
      const gotText = normalise(got.join('\n'));
      const complete = got.length === want.length;
      if (complete || Date.now() > deadline) {
        expect(gotText, `${what} (everything so far:\n${this.lines.join('\n')})`).toBe(
          want.join('\n'),
        );
        this.cursor += want.length;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

const children: ChildProcess[] = [];
let checkout: string | undefined;

afterAll(async () => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null && child.pid) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  if (checkout) rmSync(checkout, { recursive: true, force: true });
});

/** The environment of a fresh terminal: this Node first on PATH, nothing of the test's own. */
function terminalEnv(gatewayPort: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (
      /^(REGISTRAR_|npm_|POWERTOOLS_|LOG_LEVEL$|AWS_LAMBDA_LOG_LEVEL$|VITEST|NODE_OPTIONS$)/.test(
        name,
      )
    ) {
      continue;
    }
    env[name] = value;
  }
  env.PATH = `${dirname(process.execPath)}:${process.env.PATH ?? ''}`;
  // Terminal 1's only adjustment: its port (REGISTRAR_PORT is --port).
  env.REGISTRAR_PORT = String(gatewayPort);
  return env;
}

describe('README quick start', () => {
  it('has a marker on every block, and runs terminal 1 once and terminal 2 in order', () => {
    const kinds = quickStartBlocks(readme).map((block) => block.kind);
    expect(kinds.filter((kind) => kind === 'run 1')).toHaveLength(1);
    expect(kinds.indexOf('run 1')).toBeLessThan(kinds.indexOf('run 2'));
    expect(kinds).toContain('agent log');
  });

  it('shows, block by block, what running it prints', { timeout: 240_000 }, async () => {
    const gatewayPort = await freePort();
    const probePort = await freePort();
    // The README's ports, adjusted to free ones wherever they appear in a block.
    const adjust = (text: string) =>
      text.replaceAll(':8080', `:${gatewayPort}`).replaceAll('9080', String(probePort));

    checkout = mkdtempSync(join(tmpdir(), 'registrar-quickstart-'));
    for (const name of readdirSync(repo)) {
      if (['.git', '.registrar', 'web.yaml', 'cdk.out', 'dist', 'coverage'].includes(name))
        continue;
      symlinkSync(join(repo, name), join(checkout, name));
    }
    const env = terminalEnv(gatewayPort);

    const terminal1 = new LineStream();
    const agentLog = new LineStream();
    let terminal1Errors = '';
    let shell: ChildProcess | undefined;
    let stdout2 = '';
    let stderr2 = '';
    let runs = 0;
    let lastOutput: string | undefined;

    const runInTerminal2 = async (commands: string, line: number) => {
      if (!shell) {
        shell = spawn('bash', [], { cwd: checkout, env, detached: true, stdio: 'pipe' });
        children.push(shell);
        // The agent's lines (stderr, timestamped) are the agent's; npm's warnings about the
        // machine's own npmrc are not the README's business; anything else on stderr counts
        // as the command's output, so an error shows up as a difference.
        let pendingErr = '';
        shell.stdout?.on('data', (chunk: Buffer) => {
          stdout2 += chunk.toString();
        });
        shell.stderr?.on('data', (chunk: Buffer) => {
          pendingErr += chunk.toString();
          const parts = pendingErr.split('\n');
          pendingErr = parts.pop() ?? '';
          for (const part of parts) {
            if (AGENT_LINE.test(part)) agentLog.push(`${part}\n`);
            else if (!part.startsWith('npm warn ')) stderr2 += `${part}\n`;
          }
        });
      }
      runs += 1;
      const marker = `__quickstart_${runs}__`;
      const before = { out: stdout2.length, err: stderr2.length };
      shell.stdin?.write(`${adjust(commands)}\necho "${marker} $?"; echo ${marker} >&2\n`);
      const deadline = Date.now() + 60_000;
      while (!(stdout2.includes(marker) && stderr2.includes(marker))) {
        if (Date.now() > deadline) {
          throw new Error(`README.md line ${line}: no end within 60 s\n${stdout2}\n${stderr2}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const out = stdout2.slice(before.out);
      const status = out
        .slice(out.indexOf(marker) + marker.length)
        .trim()
        .split('\n')[0];
      const printed =
        out.slice(0, out.indexOf(marker)) +
        stderr2.slice(before.err, stderr2.indexOf(marker, before.err));
      expect(status, `README.md line ${line}: exit status; printed:\n${printed}`).toBe('0');
      return printed;
    };

    const blocks = quickStartBlocks(readme);
    for (const [index, block] of blocks.entries()) {
      const where = `README.md line ${block.line}`;
      // A terminal-2 run whose next block is not its output must print nothing.
      if (lastOutput !== undefined && block.kind !== 'output 2') {
        expect(normaliseOutput(lastOutput), `${where}: the block before printed this`).toBe('');
      }
      if (block.kind !== 'output 2') lastOutput = undefined;
      switch (block.kind) {
        case 'setup':
          break;
        case 'run 1': {
          // What `npm start` runs must be what the README shows terminal 1 printing: the
          // script is read from package.json, not assumed.
          expect(block.text.trim()).toBe('npm start');
          const runtime = spawn('npm', ['start'], { cwd: checkout, env, detached: true });
          children.push(runtime);
          runtime.stdout?.on('data', (chunk: Buffer) => terminal1.push(chunk.toString()));
          runtime.stderr?.on('data', (chunk: Buffer) => {
            terminal1Errors += chunk.toString();
          });
          break;
        }
        case 'output 1':
          await terminal1.expectNext(
            adjust(block.text),
            `${where}: terminal 1 (stderr: ${terminal1Errors})`,
            60_000,
          );
          break;
        case 'run 2':
          lastOutput = await runInTerminal2(block.text, block.line);
          if (index === blocks.length - 1) {
            expect(normaliseOutput(lastOutput), `${where}: printed`).toBe('');
          }
          break;
        case 'output 2':
          expect(
            lastOutput,
            `${where}: an output block must follow a terminal-2 block`,
          ).toBeDefined();
          expect(normaliseOutput(lastOutput ?? ''), where).toBe(
            normaliseOutput(adjust(block.text)),
          );
          lastOutput = undefined;
          break;
        case 'agent log':
          await agentLog.expectNext(adjust(block.text), `${where}: the agent's log`, 60_000);
          break;
      }
    }

    // Ctrl-C in terminal 1: the terminal sends SIGINT to its foreground process group.
    const runtime = children.find((child) => child.spawnargs.includes('start'));
    if (runtime?.pid) process.kill(-runtime.pid, 'SIGINT');
    const deadline = Date.now() + 30_000;
    while (!terminal1.lines.slice(terminal1.cursor).includes('stopped') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(terminal1.lines.slice(terminal1.cursor)).toContain('stopped');
    shell?.stdin?.end();
  });
});
