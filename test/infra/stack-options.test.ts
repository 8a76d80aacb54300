import { describe, expect, it } from 'vitest';
import { createStack } from './synth-stack.ts';

describe('stack options', () => {
  it.each([
    ['gracePeriod', '0s', /gracePeriod \(value '0s'\): must be a positive duration/],
    ['gracePeriod', 'soon', /gracePeriod \(value 'soon'\): must be a positive duration/],
    ['maxConnectionAge', '90m', /maxConnectionAge \(value '90m'\): must be at least 2h/],
    ['maxConnectionAge', '25h', /maxConnectionAge \(value '25h'\): must be at most 24h/],
    ['livenessInterval', '0s', /livenessInterval \(value '0s'\): must be a positive duration/],
    ['sweepRate', '30s', /sweepRate \(value '30s'\): must be whole minutes/],
    ['sweepRate', '90s', /sweepRate \(value '90s'\): must be whole minutes/],
    ['authMode', 'oidc', /authMode \(value 'oidc'\): must be 'token' or 'iam'/],
    ['alarmEmail', 'oncall', /alarmEmail \(value 'oncall'\): must be an e-mail address/],
    ['stageName', 'v1/prod', /stageName \(value 'v1\/prod'\): must be 1 to 128 letters/],
    ['apiGatewayLogsRole', 'yes', /apiGatewayLogsRole \(value 'yes'\)/],
    ['accessLogs', 'on', /accessLogs \(value 'on'\)/],
    ['fleetSize', 'many', /fleetSize \(value 'many'\): must be a whole number of VMs/],
    ['fleetSize', '0', /fleetSize \(value '0'\): must be at least 1/],
    ['fleetSize', '2.5', /fleetSize \(value '2.5'\): must be a whole number of VMs/],
    ['fleetSize', '2000000', /fleetSize \(value '2000000'\): must be at most 1,000,000/],
    ['oldestAgentVersion', '0.1.0', /oldestAgentVersion \(value '0.1.0'\): must be MAJOR.MINOR/],
  ])('refuses %s=%s at synth, naming the option and the value', (key, value, message) => {
    expect(() => createStack({ context: { [key]: value } })).toThrow(message);
  });

  it('refuses a liveness interval shorter than a slower sweep rate', () => {
    expect(() => createStack({ context: { sweepRate: '10m', livenessInterval: '5m' } })).toThrow(
      /livenessInterval \(value '5m'\): must be at least sweepRate \(10m\)/,
    );
  });

  it('refuses a liveness interval that would make a sweep read the index too many times', () => {
    // 1.5 x 24 h / 360 windows = 6 min
    expect(() =>
      createStack({ context: { maxConnectionAge: '24h', livenessInterval: '5m' } }),
    ).toThrow(/livenessInterval \(value '5m'\): must be at least 6m with maxConnectionAge 1d/);
    expect(() =>
      createStack({ context: { maxConnectionAge: '24h', livenessInterval: '6m' } }),
    ).not.toThrow();
  });

  it('names every bad option at once', () => {
    expect(() => createStack({ context: { gracePeriod: '0s', authMode: 'oidc' } })).toThrow(
      /gracePeriod .*; authMode /,
    );
  });

  it('accepts the documented options', () => {
    expect(() =>
      createStack({
        context: {
          gracePeriod: '10m',
          maxConnectionAge: '2h',
          sweepRate: '2m',
          livenessInterval: '4m',
          authMode: 'iam',
          alarmEmail: 'oncall@example.com',
          stageName: 'prod',
          apiGatewayLogsRole: 'false',
          accessLogs: 'true',
          fleetSize: '100000',
        },
      }),
    ).not.toThrow();
  });

  it('lets stack props override context', () => {
    expect(() =>
      createStack({ context: { gracePeriod: '0s' }, options: { gracePeriod: '5m' } }),
    ).not.toThrow();
  });
});
