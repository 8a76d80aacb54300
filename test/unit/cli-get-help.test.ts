import { describe, expect, it } from 'vitest';
import { captureCli } from '../fixtures/cli-run.ts';

/** `get --help` names every type get lists (issue 38: it named only wg and we). */
describe('registrar get --help', () => {
  it('names events and agents beside workloadgroups and workloadentries', async () => {
    const help = await captureCli(['get', '--help'], { env: {} });
    expect(help.code).toBe(0);
    const usage = help.stdout.split('\nExamples:')[0] ?? '';
    for (const type of ['workloadgroups (wg)', 'workloadentries (we)', 'events (ev)', 'agents']) {
      expect(usage).toContain(type);
    }
  });

  it('and registrar --help says so in its line for get', async () => {
    const help = await captureCli(['--help'], { env: {} });
    expect(help.stdout).toMatch(/^ {2}get .*their events or their agents' versions/m);
  });
});
