import packageJson from '../package.json' with { type: 'json' };

/**
 * The registrar's release: package.json's version (CHANGELOG.md lists them; between releases
 * it is the next one with `-dev`). Imported, not read from disk, so each function's bundle
 * carries it inline, as the agent's does (agent/version.ts).
 */
export const RELEASE: string = packageJson.version;
