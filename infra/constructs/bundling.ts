import { fileURLToPath } from 'node:url';

/**
 * The esbuild settings of every Lambda bundle, in one place: the function construct hands
 * them to NodejsFunction, and `bench/bundle-size.ts` bundles with the same values to measure
 * what is deployed.
 */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Lambda entry points, relative to the repository root. */
export const FUNCTION_ENTRIES = {
  authorize: 'functions/authorize.ts',
  connect: 'functions/connect.ts',
  disconnect: 'functions/disconnect.ts',
  message: 'functions/message.ts',
  sweeper: 'functions/sweeper.ts',
  ec2StateChange: 'functions/ec2-state-change.ts',
  rollout: 'functions/rollout.ts',
} as const;

export type FunctionName = keyof typeof FUNCTION_ENTRIES;

/** The functions on the WebSocket path, where cold starts are felt by connecting agents. */
export const WEBSOCKET_FUNCTIONS: readonly FunctionName[] = [
  'authorize',
  'connect',
  'disconnect',
  'message',
];

export const BUNDLE = {
  // Lambda nodejs22.x.
  target: 'node22',
  minify: true,
  // A map beside each bundle (index.mjs.map) for decoding a logged stack trace offline; without
  // the sources' text inside (they are in the repository at the deployed commit): a third of
  // the size.
  sourceMap: true,
  sourcesContent: false,
  // Nothing is left to the runtime, the AWS SDK included: production runs the SDK version the
  // tests ran (package-lock.json), not whatever the nodejs22.x runtime ships that month, and
  // the projector's @aws-sdk/credential-providers is there for sure. Measured (`node
  // bench/cold-start.ts`, docs/benchmarks.md): the minified bundle imports faster than the
  // same code loading the SDK's many files from node_modules.
  externalModules: [],
  // Prefer ES module builds so esbuild can drop what a handler never imports.
  mainFields: ['module', 'main'],
  // ESM output may still contain CommonJS dependencies that call require('node:crypto');
  // an ES module has no `require`, so give it one.
  banner:
    "import { createRequire as __registrarCreateRequire } from 'node:module'; const require = __registrarCreateRequire(import.meta.url);",
} as const;
