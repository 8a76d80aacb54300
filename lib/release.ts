import packageJson from '../package.json' with { type: 'json' };

/** package.json's version, put in by esbuild in a Lambda bundle (infra/constructs/bundling.ts). */
declare const REGISTRAR_RELEASE: string | undefined;

/**
 * The registrar's release: package.json's version (CHANGELOG.md lists them; between releases
 * it is the next one with `-dev`). Imported, not read from disk, so each function's bundle
 * carries it inline, as the agent's does (agent/version.ts). A Lambda bundle gets the version
 * alone (an esbuild define), not package.json whole (~2 KB of every bundle, issue 27).
 */
export const RELEASE: string =
  typeof REGISTRAR_RELEASE === 'string' ? REGISTRAR_RELEASE : packageJson.version;
