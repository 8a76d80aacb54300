import { fetchToken, type ImdsOptions } from './imds.ts';
import { imdsRequest } from './imds-request.ts';
import type { AwsCredentials } from './sigv4.ts';

/**
 * IAM mode's credentials, from the two places a VM has them: the AWS_* environment variables,
 * else the instance profile through IMDSv2. Not the SDK's provider chain: on a VM its other
 * steps (profiles, SSO, web identity, containers) do not apply, and it brought about 1 MB of
 * bundled code. Instance-profile credentials are kept until five minutes before they expire.
 */
const REFRESH_BEFORE_EXPIRY_MS = 5 * 60_000;
const ROLE_PATH = '/latest/meta-data/iam/security-credentials/';

export function instanceCredentials(
  imds: ImdsOptions,
  env: Record<string, string | undefined> = process.env,
  now: () => number = Date.now,
): () => Promise<AwsCredentials> {
  let cached: AwsCredentials | undefined;
  return async () => {
    const fromEnv = environmentCredentials(env);
    if (fromEnv) return fromEnv;
    const fresh = (c: AwsCredentials | undefined) =>
      c?.expiration !== undefined && c.expiration.getTime() - now() > REFRESH_BEFORE_EXPIRY_MS;
    if (cached && fresh(cached)) return cached;
    try {
      cached = await fetchRoleCredentials(imds);
    } catch (error) {
      // IMDS hiccup while the old credentials are still valid: sign with those.
      if (cached?.expiration && cached.expiration.getTime() > now()) return cached;
      throw error;
    }
    return cached;
  };
}

function environmentCredentials(env: Record<string, string | undefined>) {
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) return undefined;
  return {
    accessKeyId,
    secretAccessKey,
    ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
  };
}

async function fetchRoleCredentials(imds: ImdsOptions): Promise<AwsCredentials> {
  let token: string;
  try {
    token = await fetchToken(imds);
  } catch (error) {
    throw new Error(
      `no AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set, and ${(error as Error).message}`,
    );
  }
  const get = async (path: string) => {
    const response = await imdsRequest(new URL(path, imds.baseUrl), {
      headers: { 'X-aws-ec2-metadata-token': token },
      timeoutMs: imds.timeoutMs,
    });
    if (response.status === 404) {
      throw new Error(
        `no AWS credentials: this instance has no instance profile (IMDS ${ROLE_PATH}: HTTP 404); attach one or set AWS_ACCESS_KEY_ID`,
      );
    }
    if (response.status < 200 || response.status >= 300) {
      throw new Error(`instance profile credentials: IMDS ${path}: HTTP ${response.status}`);
    }
    return response.body.toString('utf8');
  };
  const role = (await get(ROLE_PATH)).split('\n')[0]?.trim();
  if (!role) throw new Error(`instance profile credentials: IMDS ${ROLE_PATH} named no role`);
  const document = JSON.parse(await get(`${ROLE_PATH}${encodeURIComponent(role)}`)) as {
    Code?: string;
    AccessKeyId?: string;
    SecretAccessKey?: string;
    Token?: string;
    Expiration?: string;
  };
  if (document.Code !== 'Success' || !document.AccessKeyId || !document.SecretAccessKey) {
    throw new Error(
      `instance profile credentials for role ${role}: IMDS answered Code=${document.Code ?? 'none'}`,
    );
  }
  return {
    accessKeyId: document.AccessKeyId,
    secretAccessKey: document.SecretAccessKey,
    ...(document.Token ? { sessionToken: document.Token } : {}),
    ...(document.Expiration ? { expiration: new Date(document.Expiration) } : {}),
  };
}
