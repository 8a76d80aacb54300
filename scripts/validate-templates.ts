/**
 * The offline CloudFormation template check (cfn-lint cannot be installed where CI runs: no
 * PyPI). Checks the stack variants synthesized in-process and any template files named:
 *
 *   node scripts/validate-templates.ts                  the variants (token, iam, projector)
 *   node scripts/validate-templates.ts cdk.out/*.template.json   also these files
 *
 * Prints one line per finding and exits 1 when there is any.
 */
import { readFileSync } from 'node:fs';
import { loadCfnSpec } from './cfn-spec.ts';
import { checkTemplate, type Finding } from './cfn-template-check.ts';
import { synthVariant, TEMPLATE_VARIANTS } from './template-variants.ts';

export interface TemplateReport {
  name: string;
  resources: number;
  findings: Finding[];
}

export function validateVariants(): TemplateReport[] {
  return TEMPLATE_VARIANTS.map((variant) => report(variant.name, synthVariant(variant)));
}

export function validateFile(path: string): TemplateReport {
  return report(path, JSON.parse(readFileSync(path, 'utf8')));
}

function report(name: string, template: Record<string, unknown>): TemplateReport {
  const resources = Object.keys((template.Resources as object | undefined) ?? {}).length;
  return { name, resources, findings: checkTemplate(template, loadCfnSpec()) };
}

if (import.meta.main) {
  const reports = [...validateVariants(), ...process.argv.slice(2).map(validateFile)];
  let failed = 0;
  for (const { name, resources, findings } of reports) {
    for (const f of findings) console.log(`${name}: ${f.code} ${f.path}: ${f.message}`);
    console.log(`${name}: ${resources} resources, ${findings.length} findings`);
    failed += findings.length;
  }
  console.log(`checked against ${loadCfnSpec().source}`);
  process.exit(failed > 0 ? 1 : 0);
}
