import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { cdkJsonContext } from './synth-stack.ts';

const require = createRequire(import.meta.url);

describe('cdk.json feature flags', () => {
  it('sets every flag aws-cdk-lib recommends, at its recommended value (a CDK upgrade that adds one fails here until its template diff is reviewed)', () => {
    const recommended: Record<
      string,
      unknown
    > = require('aws-cdk-lib/recommended-feature-flags.json');
    const context = cdkJsonContext();
    const unset = Object.keys(recommended).filter((flag) => !(flag in context));
    const differing = Object.keys(recommended).filter(
      (flag) =>
        flag in context && JSON.stringify(context[flag]) !== JSON.stringify(recommended[flag]),
    );
    expect({ unset, differing }).toEqual({ unset: [], differing: [] });
  });
});
