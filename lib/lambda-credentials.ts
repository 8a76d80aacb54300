/**
 * The credentials of a Lambda function: the execution role's, which the Lambda runtime puts in
 * the environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`) before
 * the handler is loaded. The registrar's functions never use another source.
 *
 * The Lambda bundles put this module in place of `@aws-sdk/credential-provider-node` (an
 * esbuild alias, infra/constructs/bundling.ts): the SDK clients import that package's
 * `defaultProvider`, the whole default chain (SSO, STS web identity, the INI and process
 * files, IMDS, ECS, login), about 90 KB of a bundle with its nested STS/SSO clients that a
 * function would only ever pass through to reach the first link. Everywhere else (the local
 * runtime, the CLI, tests) the SDK's own chain stays.
 */
export interface LambdaCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** The environment's credentials; throws naming the variables when they are not set. */
export function credentialsFromEnvironment(
  env: Record<string, string | undefined> = process.env,
): LambdaCredentials {
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) {
    throw new Error(
      'no AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set; Lambda sets them from the execution role (this bundle reads no other source)',
    );
  }
  const sessionToken = env.AWS_SESSION_TOKEN;
  return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
}

/**
 * The SDK's `credentialDefaultProvider` shape: called once per client with its configuration,
 * it returns the provider the client calls before signing. Read at each call, as the SDK's
 * environment provider does.
 */
export function defaultProvider(_init?: unknown): () => Promise<LambdaCredentials> {
  return async () => credentialsFromEnvironment();
}
