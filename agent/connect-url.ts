/** What the agent tells the registrar about itself when it connects (protocol v1 query). */
export interface ConnectParams {
  group: string;
  namespace: string;
  ips: string[];
  network?: string;
  locality?: string;
  labels: Record<string, string>;
  /** The agent's release (agent/version.ts): the registrar records it and checks its skew. */
  agentVersion?: string;
}

/**
 * `<url>?group=..&namespace=..&ip=..[&ip=..][&network=..][&locality=..][&label=k=v]..
 * [&agentVersion=..]`. The version is last and short (a few dozen bytes of the IAM mode's
 * presigned URL, which API Gateway caps at 4,096 characters): a registrar of 0.1 ignores it.
 */
export function buildConnectUrl(base: string, params: ConnectParams): string {
  const url = new URL(base);
  url.searchParams.set('group', params.group);
  url.searchParams.set('namespace', params.namespace);
  for (const ip of params.ips) url.searchParams.append('ip', ip);
  if (params.network) url.searchParams.set('network', params.network);
  if (params.locality) url.searchParams.set('locality', params.locality);
  for (const [key, value] of Object.entries(params.labels))
    url.searchParams.append('label', `${key}=${value}`);
  if (params.agentVersion) url.searchParams.set('agentVersion', params.agentVersion);
  return url.toString();
}
