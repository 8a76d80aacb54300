/**
 * Put in place of `@aws-sdk/middleware-endpoint-discovery` in the registrar's Lambda bundles
 * (an esbuild alias, infra/constructs/bundling.ts). The DynamoDB client resolves its
 * endpoint-discovery settings at construction, but none of its commands discovers endpoints
 * (DynamoDB's operations do not require it, and the registrar never turns it on): the cache
 * and its LRU package (~9 KB) are never used. The settings are resolved as off.
 */
export const NODE_ENDPOINT_DISCOVERY_CONFIG_OPTIONS = {
  environmentVariableSelector: (): undefined => undefined,
  configFileSelector: (): undefined => undefined,
  default: undefined,
};

export function resolveEndpointDiscoveryConfig<T extends object>(
  input: T,
  { endpointDiscoveryCommandCtor }: { endpointDiscoveryCommandCtor: unknown },
): T {
  return Object.assign(input, {
    endpointDiscoveryCommandCtor,
    endpointDiscoveryEnabled: () => Promise.resolve(false),
    isClientEndpointDiscoveryEnabled: false,
  });
}
