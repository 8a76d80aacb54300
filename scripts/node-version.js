/**
 * The Node.js this checkout needs, checked by every entry point before any TypeScript loads.
 *
 * Plain JavaScript on purpose: it must run on the old Node it refuses, which cannot load a
 * `.ts` file (nothing here may import one).
 *
 * Why 22.19.0: the sources run through Node's type stripping, on by default since 22.18.0
 * (23.6.0 on the 23 line), and undici 8 (under @kubernetes/client-node) declares
 * `engines: >=22.19.0`; below it `npm test` fails inside undici. package.json's `engines`,
 * `.nvmrc` and README state the same number.
 */
export const MINIMUM_NODE = '22.19.0';

/** `engines.node` in package.json: the 23 line strips types by default only from 23.6. */
export const ENGINES_RANGE = '^22.19.0 || >=23.6.0';

const HOW_TO_GET_IT =
  "run 'nvm install' in the checkout (it reads .nvmrc), or get it from https://nodejs.org/";

/**
 * What stops this Node from running the checkout, as one line, or undefined when it can.
 * `bundled`: the single-file agent (packaging/build-agent.sh) is already JavaScript and needs
 * only Node 22 (esbuild's target).
 */
export function nodeVersionProblem({
  program = 'workload-registrar',
  version = process.versions.node,
  execPath = process.execPath,
  typescript = process.features?.typescript,
  bundled = false,
} = {}) {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  const running = `this is Node.js v${version} (${execPath})`;
  if (bundled) {
    return major >= 22
      ? undefined
      : `${program} needs Node.js 22 or newer; ${running}; get it from https://nodejs.org/`;
  }
  const supported = (major === 22 && minor >= 19) || (major === 23 && minor >= 6) || major >= 24;
  if (!supported) {
    return `${program} needs Node.js ${MINIMUM_NODE} or newer; ${running}; ${HOW_TO_GET_IT}`;
  }
  // Type stripping can still be switched off (--no-experimental-strip-types).
  if (typescript === false) {
    return `${program} runs its TypeScript sources directly, but type stripping is off in this Node.js v${version}: remove --no-experimental-strip-types from the command line and NODE_OPTIONS`;
  }
  return undefined;
}

/** Prints the problem as one line on stderr and exits 1; returns when this Node is fine. */
export function exitUnlessSupportedNode(options) {
  const problem = nodeVersionProblem(options);
  if (problem === undefined) return;
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
