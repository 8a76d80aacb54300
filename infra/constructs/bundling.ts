import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundledCertificates } from '../../lib/auth/aws-instance-identity-certs.ts';
import { RELEASE } from '../../lib/release.ts';

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
  // the projector's credential chain (@aws-sdk/credential-provider-node) is there for sure.
  // Measured (`node bench/cold-start.ts`, docs/benchmarks.md): the minified bundle imports
  // faster than the same code loading the SDK's many files from node_modules.
  externalModules: [],
  // Prefer ES module builds so esbuild can drop what a handler never imports.
  mainFields: ['module', 'main'],
  // ESM output may still contain CommonJS dependencies that call require('node:crypto');
  // an ES module has no `require`, so give it one.
  banner:
    "import { createRequire as __registrarCreateRequire } from 'node:module'; const require = __registrarCreateRequire(import.meta.url);",
} as const;

/**
 * Module substitutions of the registrar's own functions (FUNCTION_ENTRIES), which run with
 * Lambda's environment credentials and nothing else: the SDK's default credential chain
 * (SSO, STS, INI files, IMDS, ECS; ~90 KB with its nested clients) becomes a provider that
 * reads the environment (lib/lambda-credentials.ts). The SDK's event streams and DynamoDB's
 * endpoint discovery, which no call of theirs uses, are left out (lib/lambda-no-*.ts).
 * test/infra/bundle-invoke.test.ts invokes the bundles built with them.
 */
export const FUNCTION_ALIASES: Readonly<Record<string, string>> = Object.freeze({
  '@aws-sdk/credential-provider-node': join(REPO_ROOT, 'lib/lambda-credentials.ts'),
  '@smithy/core/event-streams': join(REPO_ROOT, 'lib/lambda-no-event-streams.ts'),
  '@aws-sdk/middleware-endpoint-discovery': join(REPO_ROOT, 'lib/lambda-no-endpoint-discovery.ts'),
});

/** The esbuild `--alias` values of FUNCTION_ALIASES, as NodejsFunction's esbuildArgs take them. */
export function aliasArgs(aliases: Readonly<Record<string, string>>): string[] {
  return Object.entries(aliases).map(([from, to]) => `${from}=${to}`);
}

/**
 * The `define` of a bundle: the release (lib/release.ts), and the instance identity
 * certificates of `regions` only (those the stack trusts: `$connect` in IAM mode), none for
 * every other function. Each is checked
 * against its pin at synth (lib/auth/aws-instance-identity-certs.ts).
 */
export function bundleDefine(regions: readonly string[] = []): Record<string, string> {
  return { ...bundledCertificates(regions), REGISTRAR_RELEASE: JSON.stringify(RELEASE) };
}
