/**
 * `cdk deploy -c graceperiod=10m` set nothing: the CDK hands the app every context key, and a
 * misspelt option was read by nobody, so the stack deployed its default in silence. The app
 * refuses a key it does not know, naming the option it most likely meant.
 */

/** Keys the CDK itself keeps in context (cdk.json, cdk.context.json) without a ':' in them. */
const CDK_OWN_KEYS = new Set(['acknowledged-issue-numbers', 'cli-telemetry', 'cdk-version']);

/**
 * The context keys no option reads. Feature flags (`@aws-cdk/core:...`) and the CDK's own
 * keys (`aws:cdk:...`, cached lookups such as `availability-zones:account=...`) all carry a
 * ':' and are never an option's.
 */
export function unknownContextKeys(
  context: Record<string, unknown>,
  known: readonly string[],
): string[] {
  const options = new Set(known);
  return Object.keys(context)
    .filter((key) => !key.includes(':') && !key.startsWith('@') && !CDK_OWN_KEYS.has(key))
    .filter((key) => !options.has(key))
    .sort();
}

/** The option a misspelt key most likely meant: same letters ignoring case, or one edit away. */
export function closestOption(key: string, known: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  const exact = known.find((option) => option.toLowerCase() === lower);
  if (exact) return exact;
  let best: { option: string; distance: number } | undefined;
  for (const option of known) {
    const distance = editDistance(lower, option.toLowerCase());
    if (distance <= 2 && (best === undefined || distance < best.distance)) {
      best = { option, distance };
    }
  }
  return best?.option;
}

/** Levenshtein distance, for a handful of short option names. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(
        Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitution),
      );
    }
    previous = current;
  }
  return previous[b.length] as number;
}

/** The message for unknown keys, one clause each, and where the options are listed. */
export function unknownKeysMessage(unknown: readonly string[], known: readonly string[]): string {
  const clauses = unknown.map((key) => {
    const meant = closestOption(key, known);
    return `-c ${key}${meant ? ` (did you mean ${meant}?)` : ''}`;
  });
  return `unknown stack option ${clauses.join(', ')}: no option reads it, so it would deploy the default; the options are ${[...known].sort().join(', ')} (docs/deploy.md)`;
}
