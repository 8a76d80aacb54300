import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runProgram } from '../fixtures/run-program.ts';

/**
 * `cdk synth -c gracePeriod=0m` as the CDK CLI runs the app: `node infra/app.ts` with the
 * context in CDK_CONTEXT_JSON. A bad option is one line naming it and its value, exit 1; it
 * used to come inside a Node stack trace of the app.
 */
let outdir: string;
beforeEach(() => {
  outdir = mkdtempSync(join(tmpdir(), 'cdk-out-'));
});
afterEach(() => rmSync(outdir, { recursive: true, force: true }));

async function synth(context: Record<string, unknown>) {
  const run = await runProgram(process.execPath, ['infra/app.ts'], {
    ...process.env,
    CDK_OUTDIR: outdir,
    CDK_CONTEXT_JSON: JSON.stringify(context),
  });
  return { status: run.code, stdout: run.stdout, stderr: run.stderr };
}

describe('cdk synth with a bad option', () => {
  it.each([
    [
      { gracePeriod: '0m' },
      "workload-registrar: invalid stack option gracePeriod (value '0m'): must be a positive duration such as 500ms, 10s, 5m or 2h, got '0m'; set it with cdk deploy -c <option>=<value>",
    ],
    [
      { authMode: 'oauth' },
      "workload-registrar: invalid stack option authMode (value 'oauth'): must be 'token' or 'iam'; set it with cdk deploy -c <option>=<value>",
    ],
    [
      { projectorClusterName: 'prod', projectorEndpoint: 'http://x' },
      "workload-registrar: invalid projector option projectorEndpoint (value 'http://x'): must be the cluster's https:// endpoint; projectorCertificateAuthority: must be the base64 certificateAuthority.data of the cluster",
    ],
    [
      { groupSource: 'git' },
      "workload-registrar: invalid stack option groupSource (value 'git'): must be 'registry' or 'cluster'; set it with cdk deploy -c groupSource=<value>",
    ],
    [
      { meshTokenLifetime: '30m' },
      "workload-registrar: invalid mesh option meshTokenLifetime (value '30m'): applies only with the projector, which the sidecar bootstrap mints in; set projectorClusterName, projectorEndpoint and projectorCertificateAuthority (docs/kubernetes.md)",
    ],
  ])('prints the message alone for %j and exits 1', async (context, message) => {
    const result = await synth(context);
    expect(result.status).toBe(1);
    expect(result.stderr).toBe(`${message}\n`);
    expect(result.stderr).not.toMatch(/\n\s+at |StackOptionsError/);
    expect(result.stdout).toBe('');
  });
});

// A synth runs cdk-nag over the whole stack: tens of seconds on a busy machine.
describe('cdk synth with an option nobody reads', { timeout: 180_000 }, () => {
  it('refuses a misspelt option, naming the one it meant, instead of deploying the default', async () => {
    const result = await synth({ graceperiod: '10m', sweepRat: '2m' });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(
      /^workload-registrar: unknown stack option -c graceperiod \(did you mean gracePeriod\?\), -c sweepRat \(did you mean sweepRate\?\): no option reads it, so it would deploy the default; the options are .*gracePeriod.*\n$/,
    );
    expect(result.stdout).toBe('');
  });

  it("accepts the CDK's own keys and feature flags beside the options", async () => {
    const result = await synth({
      gracePeriod: '10m',
      '@aws-cdk/core:enablePartitionLiterals': 'true',
      'aws:cdk:enable-path-metadata': 'true',
      'acknowledged-issue-numbers': [],
      // The CDK's own key for "bundle no stack": this synth needs no Lambda code.
      'aws:cdk:bundling-stacks': [],
    });
    expect(result.stderr).not.toContain('unknown stack option');
    expect(result.status).toBe(0);
  });
});
