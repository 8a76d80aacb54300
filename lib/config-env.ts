/**
 * The environment variables the registrar reads, and their defaults: apart from `config.ts`
 * (which validates them with zod) so that the CLI can name them in `--help` and find its
 * table without loading zod (issue 17: the CLI's start-up).
 */
export const ENV = {
  tableName: 'REGISTRAR_TABLE',
  dynamoDbEndpoint: 'REGISTRAR_DYNAMODB_ENDPOINT',
  region: 'AWS_REGION',
  gracePeriod: 'REGISTRAR_GRACE_PERIOD',
  maxConnectionAge: 'REGISTRAR_MAX_CONNECTION_AGE',
  sweepMaxDeletes: 'REGISTRAR_SWEEP_MAX_DELETES',
  sweepDeletesPerSecond: 'REGISTRAR_SWEEP_DELETES_PER_SECOND',
  sweepInterval: 'REGISTRAR_SWEEP_INTERVAL',
  livenessInterval: 'REGISTRAR_LIVENESS_INTERVAL',
  connectionsUrl: 'REGISTRAR_CONNECTIONS_URL',
  connectSettle: 'REGISTRAR_CONNECT_SETTLE',
  controller: 'REGISTRAR_CONTROLLER',
  authMode: 'REGISTRAR_AUTH_MODE',
  disruptionThreshold: 'REGISTRAR_DISRUPTION_THRESHOLD',
  disruptionWindow: 'REGISTRAR_DISRUPTION_WINDOW',
  secondaryDeletesPerSecond: 'REGISTRAR_SWEEP_SECONDARY_DELETES_PER_SECOND',
  holdBound: 'REGISTRAR_SWEEP_HOLD_BOUND',
  ec2States: 'REGISTRAR_EC2_STATES',
  instanceAttestation: 'REGISTRAR_INSTANCE_ATTESTATION',
  instanceIdentityCerts: 'REGISTRAR_INSTANCE_IDENTITY_CERTS',
  namespaceSettingsCache: 'REGISTRAR_NAMESPACE_SETTINGS_CACHE',
  instanceIdentityRegions: 'REGISTRAR_INSTANCE_IDENTITY_REGIONS',
  oldestAgentVersion: 'REGISTRAR_OLDEST_AGENT_VERSION',
  heartbeatLanes: 'REGISTRAR_HEARTBEAT_LANES',
} as const;

export const DEFAULTS = {
  gracePeriod: '5m',
  // API Gateway's hard limit for a WebSocket connection.
  maxConnectionAge: '2h',
  sweepMaxDeletes: 1000,
  sweepDeletesPerSecond: 50,
  // The EventBridge schedule's default rate.
  sweepInterval: '1m',
  // At most a quarter of the max connection age when that is shorter (local runs, tests).
  livenessInterval: '5m',
  // API Gateway's 29 s integration timeout, rounded up.
  connectSettle: '30s',
  controller: 'workload-registrar',
  region: 'us-east-1',
  // Kubernetes' --unhealthy-zone-threshold.
  disruptionThreshold: '55%',
  disruptionWindow: '5m',
  // One deletion every 10 s in a disrupted zone: Kubernetes' secondary eviction rate is a
  // tenth of its normal one; ours is lower still against a normal 50/s, as a zone of a
  // thousand VMs then takes close to 3 h to empty, far past the hold bound.
  secondaryDeletesPerSecond: 0.1,
  holdBound: '1h',
  // An instance stopping may start again (and keep its address); only these never come back.
  ec2States: 'shutting-down,terminated',
  // How long $connect trusts a namespace's settings once read: an operator's change reaches
  // every connect within it, and a connect reads them at most this often per function instance.
  namespaceSettingsCache: '30s',
  // One sweeper invocation checks the heartbeat groups' holders (lib/domain/heartbeat-lanes.ts).
  heartbeatLanes: 1,
} as const;
