import { readFile } from 'node:fs/promises';
import { instanceCredentials } from './aws-credentials.ts';
import type { AgentAuth } from './config.ts';
import type { ImdsOptions } from './imds.ts';
import { DEFAULT_IMDS_URL } from './settings.ts';
import type { AwsCredentials } from './sigv4.ts';

/** Turns the connect URL into what one upgrade attempt sends: URL and headers. */
export interface Authenticator {
  prepare(url: string): Promise<{ url: string; headers: Record<string, string> }>;
}

export class AuthSetupError extends Error {}

/**
 * Token mode. The file is read on every attempt so that an operator can replace an expired
 * token without restarting the agent; the token never appears in a log line.
 */
export function tokenAuthenticator(auth: { token?: string; tokenFile?: string }): Authenticator {
  return {
    async prepare(url) {
      const token = auth.tokenFile === undefined ? auth.token : await readToken(auth.tokenFile);
      if (!token)
        throw new AuthSetupError('no join token: set REGISTRAR_AGENT_TOKEN or --token-file');
      return { url, headers: { Authorization: `Bearer ${token}` } };
    },
  };
}

async function readToken(path: string): Promise<string> {
  try {
    const token = (await readFile(path, 'utf8')).trim();
    if (!token)
      throw new AuthSetupError(`token file ${path} is empty; write the join token into it`);
    return token;
  } catch (error) {
    if (error instanceof AuthSetupError) throw error;
    throw new AuthSetupError(`cannot read token file ${path}: ${(error as Error).message}`);
  }
}

/**
 * IAM mode: presigns every attempt with fresh credentials from the provider, and sends the
 * instance identity document's headers (agent/identity-evidence.ts) with each one.
 */
export function iamAuthenticator(
  region: string,
  credentials: () => Promise<AwsCredentials>,
  evidenceHeaders: Record<string, string> = {},
): Authenticator {
  return {
    async prepare(url) {
      // Loaded on first use: token-mode agents never pay for the signer's memory.
      const { presignConnectUrl } = await import('./sigv4.ts');
      return {
        url: await presignConnectUrl(url, { region, credentials }),
        headers: { ...evidenceHeaders },
      };
    },
  };
}

/**
 * Builds the authenticator for the configured mode. In IAM mode the region comes from the
 * config, else from an execute-api host name, else from the instance's own region.
 */
export async function createAuthenticator(
  auth: AgentAuth,
  url: string,
  instanceRegion: string | undefined,
  evidenceHeaders: Record<string, string> = {},
  imds: ImdsOptions = { baseUrl: DEFAULT_IMDS_URL, timeoutMs: 1_000 },
): Promise<Authenticator> {
  if (auth.mode === 'token') return tokenAuthenticator(auth);
  const { regionFromUrl } = await import('./sigv4.ts');
  const region = auth.region ?? regionFromUrl(url) ?? instanceRegion;
  if (!region) {
    throw new AuthSetupError(
      `cannot tell the AWS region for IAM signing from ${new URL(url).host}; pass --region <region>`,
    );
  }
  // The environment's keys, else the instance profile's, cached until shortly before expiry.
  return iamAuthenticator(region, instanceCredentials(imds), evidenceHeaders);
}
