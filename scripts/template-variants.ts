/**
 * The stack variants a deploy can produce, synthesized in-process for cfn-lint and the table
 * guard: token mode (the default), IAM mode, the optional parts on (projector, alarm email),
 * and the account logs role with access logs. Bundling is skipped (esbuild does not change a
 * template's shape; the real `cdk synth` in .ci/run bundles, and its template is linted too).
 *
 *   node scripts/template-variants.ts <dir>    writes <dir>/<variant>.template.json
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { RegistrarStack } from '../infra/registrar-stack.ts';

export interface TemplateVariant {
  name: string;
  /** Context as `cdk deploy -c key=value` sets it. */
  context: Record<string, string>;
}

export const TEMPLATE_VARIANTS: readonly TemplateVariant[] = [
  { name: 'token', context: {} },
  { name: 'iam', context: { authMode: 'iam' } },
  {
    name: 'projector',
    context: {
      projectorClusterName: 'prod',
      projectorEndpoint: 'https://ABC123.gr7.eu-west-1.eks.amazonaws.com',
      projectorCertificateAuthority: 'LS0tLS1CRUdJTg==',
      projectorTargets: 'istio,endpointslices',
      alarmEmail: 'oncall@example.com',
    },
  },
  { name: 'logs-role', context: { apiGatewayLogsRole: 'true' } },
];

/** The region the variants are synthesized for (as the CDK tests do). */
export const VARIANT_REGION = 'eu-west-1';

/** One directory for every synth of this process, removed when it exits. */
let synthRoot: string | undefined;
function synthOutdir(): string {
  if (!synthRoot) {
    const root = mkdtempSync(join(tmpdir(), 'registrar-variants-'));
    process.once('exit', () => rmSync(root, { recursive: true, force: true }));
    synthRoot = root;
  }
  return mkdtempSync(join(synthRoot, 'app-'));
}

export function synthVariant(variant: TemplateVariant): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(new URL('../cdk.json', import.meta.url), 'utf8'));
  const app = new App({
    outdir: synthOutdir(),
    context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [], ...variant.context },
  });
  const stack = new RegistrarStack(app, 'Registrar', {
    env: { account: '123456789012', region: VARIANT_REGION },
  });
  return app.synth().getStackByName(stack.stackName).template;
}

if (import.meta.main) {
  const dir = process.argv[2];
  if (!dir) {
    console.error('usage: node scripts/template-variants.ts <dir>');
    process.exit(2);
  }
  mkdirSync(dir, { recursive: true });
  for (const variant of TEMPLATE_VARIANTS) {
    const file = join(dir, `${variant.name}.template.json`);
    writeFileSync(file, `${JSON.stringify(synthVariant(variant), null, 1)}\n`);
    console.log(file);
  }
}
