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
  sourceMap: true,
  // The runtime ships AWS SDK v3: bundling it again would add ~1 MB per function and slow
  // every cold start. Everything else (Powertools, middy, zod) is bundled.
  externalModules: ['@aws-sdk/*'],
  // Prefer ES module builds so esbuild can drop what a handler never imports.
  mainFields: ['module', 'main'],
  // ESM output may still contain CommonJS dependencies that call require('node:crypto');
  // an ES module has no `require`, so give it one.
  banner:
    "import { createRequire as __registrarCreateRequire } from 'node:module'; const require = __registrarCreateRequire(import.meta.url);",
} as const;
