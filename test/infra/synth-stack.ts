import { readFileSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { RegistrarStack } from '../../infra/registrar-stack.ts';
import type { StackOptionsInput } from '../../infra/stack-options.ts';

/** The context `cdk synth` runs with (cdk.json), so tests see the feature flags a deploy sees. */
export function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8'));
  return cdkJson.context ?? {};
}

export interface SynthOptions {
  options?: StackOptionsInput;
  /** Context as `cdk deploy -c key=value` would set it. */
  context?: Record<string, unknown>;
}

/**
 * Synthesizes the stack without bundling the functions (esbuild for five functions in every
 * test would dominate the run time); `bundle-contents.test.ts` and the real `cdk synth` in
 * .ci/run prove the bundling.
 */
export function createStack(synth: SynthOptions = {}): { app: App; stack: RegistrarStack } {
  const app = new App({
    context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [], ...synth.context },
  });
  const stack = new RegistrarStack(app, 'Registrar', {
    env: { account: '123456789012', region: 'eu-west-1' },
    ...(synth.options ? { options: synth.options } : {}),
  });
  return { app, stack };
}

export function synthTemplate(synth: SynthOptions = {}): Template {
  return Template.fromStack(createStack(synth).stack);
}
