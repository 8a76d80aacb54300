import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleFunction } from '../../bench/bundle-size.ts';
import { assetPath, RegistrarFunction } from '../../infra/constructs/registrar-function.ts';
import { certificateOfRegion } from '../../lib/auth/aws-instance-identity-certs.ts';
import { loadTrustedCertificates } from '../../lib/auth/instance-identity-document.ts';

/**
 * A function's extra files (an operator's certificates: any number, more than Lambda's 4 KB
 * of environment holds) are in the code Lambda runs, where the function reads them. A real
 * bundle (esbuild) of one function, then its asset directory read back.
 */
const dir = mkdtempSync(join(tmpdir(), 'function-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a function with files', () => {
  it('carries each file beside its bundle, readable as /var/task/<name> says', async () => {
    const pem = ['us-east-1', 'eu-west-1', 'ap-south-1', 'sa-east-1']
      .map((region) => certificateOfRegion(region)?.pem.trim())
      .join('\n');
    const file = join(dir, "operator's certs.pem");
    writeFileSync(file, `${pem}\n`);
    const outdir = join(dir, 'cdk.out');
    const app = new App({ outdir, context: { 'aws:cdk:bundling-stacks': ['**'] } });
    const stack = new Stack(app, 'Files');
    new RegistrarFunction(stack, 'Connect', {
      name: 'connect',
      environment: {},
      files: { 'instance-identity-certs.pem': file },
    });
    app.synth();

    const asset = readdirSync(outdir).find((name) => name.startsWith('asset.'));
    expect(asset).toBeDefined();
    const copied = join(outdir, asset as string, 'instance-identity-certs.pem');
    expect(readFileSync(copied, 'utf8')).toBe(`${pem}\n`);
    expect(readdirSync(join(outdir, asset as string))).toContain('index.mjs');
    // The construct bundles as bench/bundle-size.ts measures (the Lambda substitutions too).
    const measured = await bundleFunction('connect', { certificateRegions: [] });
    const bytes = Object.values(measured.outputs).find((o) => o.entryPoint)?.bytes;
    expect(statSync(join(outdir, asset as string, 'index.mjs')).size).toBe(bytes);
    // What the function does with the path it is given: four certificates, trusted.
    expect(loadTrustedCertificates(copied, 'REGISTRAR_INSTANCE_IDENTITY_CERTS')).toHaveLength(4);
    expect(assetPath('instance-identity-certs.pem')).toBe('/var/task/instance-identity-certs.pem');
  }, 180_000);
});
