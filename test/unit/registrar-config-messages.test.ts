import { describe, expect, it } from 'vitest';
import { ConfigError, readConfig } from '../../lib/config.ts';

/**
 * Every refusal of the registrar's configuration, word for word: the messages are what an
 * operator reads in a failed invocation's log and what docs and runbooks quote. They were
 * written by zod until issue 27 replaced it with plain checks (lib/config-checks.ts) to take
 * ~85 KB out of every Lambda bundle; these pin that nothing an operator sees changed.
 */
const REFUSALS: [Record<string, string>, string][] = [
  [
    {},
    'invalid configuration: REGISTRAR_TABLE: Invalid input: expected string, received undefined',
  ],
  [
    { REGISTRAR_TABLE: '' },
    "invalid configuration: REGISTRAR_TABLE (value ''): Invalid input: expected string, received undefined",
  ],
  [
    { REGISTRAR_TABLE: 't', REGISTRAR_DYNAMODB_ENDPOINT: 'not a url' },
    "invalid configuration: REGISTRAR_DYNAMODB_ENDPOINT (value 'not a url'): Invalid URL",
  ],
  [
    { REGISTRAR_TABLE: 't', REGISTRAR_AUTH_MODE: 'oidc' },
    'invalid configuration: REGISTRAR_AUTH_MODE (value \'oidc\'): Invalid option: expected one of "token"|"iam"',
  ],
  [
    { REGISTRAR_TABLE: 't', REGISTRAR_INSTANCE_ATTESTATION: 'maybe' },
    "invalid configuration: REGISTRAR_INSTANCE_ATTESTATION (value 'maybe'): must be 'required' or 'optional'",
  ],
  [
    { REGISTRAR_TABLE: 't', REGISTRAR_GRACE_PERIOD: '0' },
    "invalid configuration: REGISTRAR_GRACE_PERIOD (value '0'): must be a positive duration such as 500ms, 10s, 5m or 2h, got '0'",
  ],
  [
    { REGISTRAR_TABLE: 't', REGISTRAR_SWEEP_MAX_DELETES: '1.5' },
    "invalid configuration: REGISTRAR_SWEEP_MAX_DELETES (value '1.5'): must be a positive integer, got '1.5'",
  ],
  [
    { REGISTRAR_TABLE: 't', REGISTRAR_DISRUPTION_THRESHOLD: '100%' },
    "invalid configuration: REGISTRAR_DISRUPTION_THRESHOLD (value '100%'): must be a share between 0 and 1 (exclusive) such as 55% or 0.55, got '100%'",
  ],
  [
    { REGISTRAR_TABLE: 't', REGISTRAR_SWEEP_SECONDARY_DELETES_PER_SECOND: '-1' },
    "invalid configuration: REGISTRAR_SWEEP_SECONDARY_DELETES_PER_SECOND (value '-1'): must be a positive number of deletions per second such as 0.1, got '-1'",
  ],
  [
    { REGISTRAR_TABLE: 't', REGISTRAR_EC2_STATES: 'terminated,rebooting' },
    "invalid configuration: REGISTRAR_EC2_STATES (value 'terminated,rebooting'): must be a comma-separated list of shutting-down, terminated, stopping, stopped, got 'terminated,rebooting'",
  ],
  [
    { REGISTRAR_TABLE: 't', REGISTRAR_INSTANCE_IDENTITY_REGIONS: 'EU-WEST-1' },
    "invalid configuration: REGISTRAR_INSTANCE_IDENTITY_REGIONS (value 'EU-WEST-1'): must be a comma-separated list of AWS Regions such as eu-west-1,us-east-1, got 'EU-WEST-1'",
  ],
  [
    { REGISTRAR_AUTH_MODE: 'x', REGISTRAR_GRACE_PERIOD: '-1' },
    "invalid configuration: REGISTRAR_TABLE: Invalid input: expected string, received undefined; REGISTRAR_GRACE_PERIOD (value '-1'): must be a positive duration such as 500ms, 10s, 5m or 2h, got '-1'; REGISTRAR_AUTH_MODE (value 'x'): Invalid option: expected one of \"token\"|\"iam\"",
  ],
];

describe('registrar configuration: refusals', () => {
  it.each(REFUSALS)('refuses %j naming the variable and the value', (env, message) => {
    expect(() => readConfig(env)).toThrow(ConfigError);
    expect(() => readConfig(env)).toThrow(message);
    try {
      readConfig(env);
    } catch (error) {
      expect((error as Error).message).toBe(message);
    }
  });

  it('accepts each kind of value, parsed and with defaults for the rest', () => {
    const config = readConfig({
      REGISTRAR_TABLE: 'registry',
      REGISTRAR_DYNAMODB_ENDPOINT: ' http://127.0.0.1:8000\t',
      REGISTRAR_AUTH_MODE: 'iam',
      REGISTRAR_INSTANCE_ATTESTATION: 'optional',
      REGISTRAR_GRACE_PERIOD: '10m',
      REGISTRAR_SWEEP_MAX_DELETES: '20',
      REGISTRAR_DISRUPTION_THRESHOLD: '0.4',
      REGISTRAR_SWEEP_SECONDARY_DELETES_PER_SECOND: '0.5',
      REGISTRAR_EC2_STATES: 'stopped, terminated,stopped',
      REGISTRAR_INSTANCE_IDENTITY_REGIONS: 'eu-west-1,us-east-1,eu-west-1',
      REGISTRAR_CONTROLLER: '',
    });
    expect(config.dynamoDbEndpoint).toBe('http://127.0.0.1:8000');
    expect(config.authMode).toBe('iam');
    expect(config.instanceAttestation).toBe('optional');
    expect(config.sweep.gracePeriodMs).toBe(600_000);
    expect(config.sweep.maxConnectionAgeMs).toBe(7_200_000);
    expect(config.sweep.maxDeletesPerRun).toBe(20);
    expect(config.sweep.failStatic.threshold).toBe(0.4);
    expect(config.sweep.failStatic.secondaryDeletesPerSecond).toBe(0.5);
    expect(config.ec2States).toEqual(['stopped', 'terminated']);
    expect(config.instanceIdentityRegions).toEqual(['eu-west-1', 'us-east-1']);
    // An empty variable is an unset one: the default applies.
    expect(config.controller).toBe('workload-registrar');
    expect(config.region).toBe('us-east-1');
  });
});
