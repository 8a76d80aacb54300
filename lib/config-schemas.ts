import * as z from 'zod';
import * as check from './config-checks.ts';

/**
 * The configuration checks (config-checks.ts) as zod schemas, for the stack's options
 * (infra/stack-options.ts), which validate a whole object with zod at synth. Lambda functions
 * never import this file: their bundles carry the plain checks only.
 */
function fromCheck<T>(run: check.Check<T>) {
  return z.string().transform((text, ctx) => {
    const result = run(text);
    if (result instanceof check.Invalid) {
      ctx.addIssue({ code: 'custom', message: result.message });
      return z.NEVER;
    }
    return result;
  });
}

export const positiveDuration = fromCheck(check.positiveDuration);
export const shareOption = fromCheck(check.share);
export const positiveRate = fromCheck(check.positiveRate);
export const ec2StatesOption = fromCheck(check.ec2States);
export const regionListOption = fromCheck(check.regionList);
