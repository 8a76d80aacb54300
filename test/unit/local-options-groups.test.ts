import { describe, expect, it } from 'vitest';
import { OptionsError, parseLocalOptions } from '../../infra/local/options.ts';

/** `npm start`'s options for template rollouts and groups from the cluster. */
function run(argv: string[], env: Record<string, string> = {}) {
  const parsed = parseLocalOptions(argv, env);
  if (parsed.kind !== 'run') throw new Error('expected a run');
  return parsed.options;
}

function refusal(argv: string[], env: Record<string, string> = {}): string {
  try {
    parseLocalOptions(argv, env);
  } catch (error) {
    if (error instanceof OptionsError) return error.message;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('npm start --group-source', () => {
  it('takes groups from the cluster with a cluster to sync from, and a selector', () => {
    expect(
      run(['--project', '--group-source', 'cluster', '--group-selector', 'registrar=on'])
        .groupSource,
    ).toEqual({
      kind: 'cluster',
      selector: 'registrar=on',
    });
    expect(run(['--kubeconfig', 'k'], { REGISTRAR_GROUP_SOURCE: 'cluster' }).groupSource).toEqual({
      kind: 'cluster',
    });
    expect(run([]).groupSource).toBeUndefined();
  });

  it('refuses a source it does not know, naming the flag or the variable', () => {
    expect(refusal(['--group-source', 'git'])).toBe(
      "invalid --group-source (value 'git'): must be 'registry' or 'cluster'",
    );
    expect(refusal([], { REGISTRAR_GROUP_SOURCE: 'git' })).toBe(
      "invalid REGISTRAR_GROUP_SOURCE (value 'git'): must be 'registry' or 'cluster'",
    );
  });

  it('refuses groups from the cluster without a cluster, and a selector without them', () => {
    expect(refusal(['--group-source', 'cluster'])).toContain(
      '--group-source cluster needs a cluster to sync from: add --project',
    );
    expect(refusal(['--group-selector', 'a=b'])).toContain(
      "invalid --group-selector (value 'a=b'): applies only with --group-source=cluster",
    );
  });

  it('reads --rollout-interval as a duration', () => {
    expect(run(['--rollout-interval', '2s']).rolloutIntervalMs).toBe(2_000);
    expect(refusal(['--rollout-interval', '0s'])).toContain("invalid --rollout-interval '0s'");
  });
});
