import { readFileSync } from 'node:fs';

/**
 * The project's version, from package.json: the CLI runs from a checkout (no build step), so
 * the file next to it is the one it was checked out with.
 */
export function projectVersion(): string {
  const text = readFileSync(new URL('../package.json', import.meta.url), 'utf8');
  const { version } = JSON.parse(text) as { version?: unknown };
  return typeof version === 'string' ? version : 'unknown';
}
