import packageJson from '../package.json' with { type: 'json' };

/**
 * The agent's version: the package's. Imported, not read from disk, so that the single-file
 * bundle (packaging/build-agent.sh), which has no package.json beside it, carries it inline.
 */
export const AGENT_VERSION: string = packageJson.version;

/** `registrar-agent --version`, the same shape as `registrar --version`. */
export function versionLine(): string {
  return `registrar-agent ${AGENT_VERSION}`;
}
