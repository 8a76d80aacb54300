import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  section,
  startWalkthrough,
  type Walkthrough,
  walkthroughBlocks,
} from '../fixtures/doc-walkthrough.ts';

/**
 * README.md's quick start, run as a user runs it (two terminals in the checkout: `npm start`
 * in the first; the shell commands, the background agent and `kill %1` in the second), and
 * compared block by block with what the README says they will see. Every block of the section
 * carries a `<!-- quickstart: ... -->` comment saying what it is (test/fixtures/
 * doc-walkthrough.ts); what is adjusted (free ports instead of 8080 and 9080) and normalised
 * (times, ages, connection IDs, the DynamoDB port) is listed there.
 */

const repo = process.cwd();
const readme = readFileSync(join(repo, 'README.md'), 'utf8');
const quickStart = () =>
  walkthroughBlocks(readme, 'quickstart', {
    ...section(readme, '## Quick start'),
    everyBlock: true,
  });

let walkthrough: Walkthrough | undefined;
afterAll(async () => {
  await walkthrough?.close();
});

describe('README quick start', () => {
  it('marks every block, and starts terminal 1 once, before terminal 2', () => {
    const kinds = quickStart().map((block) => block.kind);
    expect(kinds.filter((kind) => kind === 'run 1')).toHaveLength(1);
    expect(kinds.indexOf('run 1')).toBeLessThan(kinds.indexOf('run 2'));
    expect(kinds).toContain('agent log');
  });

  it('prints, block by block, what the README shows', { timeout: 240_000 }, async () => {
    walkthrough = await startWalkthrough(repo);
    await walkthrough.run(quickStart(), 'README.md');
    // "press Ctrl-C in terminal 1: the registrar ... stops"
    expect(await walkthrough.stopTerminal1()).toContain('stopped');
  });

  it('writes the same WorkloadGroup as examples/web-group.yaml, which the docs apply', () => {
    const heredoc = /cat > web\.yaml <<'YAML'\n([\s\S]*?)\nYAML\n/.exec(readme)?.[1];
    expect(`${heredoc}\n`).toBe(readFileSync(join(repo, 'examples/web-group.yaml'), 'utf8'));
  });
});
