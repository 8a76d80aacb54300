import { describe, expect, it } from 'vitest';
import { createStack } from './synth-stack.ts';

describe('stack options', () => {
  it.each([
    ['gracePeriod', '0s', /gracePeriod \(value '0s'\): must be a positive duration/],
    ['gracePeriod', 'soon', /gracePeriod \(value 'soon'\): must be a positive duration/],
    ['maxConnectionAge', '3h', /maxConnectionAge \(value '3h'\): must be at most 2h/],
    ['sweepRate', '30s', /sweepRate \(value '30s'\): must be whole minutes/],
    ['sweepRate', '90s', /sweepRate \(value '90s'\): must be whole minutes/],
    ['authMode', 'oidc', /authMode \(value 'oidc'\): must be 'token' or 'iam'/],
    ['alarmEmail', 'oncall', /alarmEmail \(value 'oncall'\): must be an e-mail address/],
    ['stageName', 'v1/prod', /stageName \(value 'v1\/prod'\): must be 1 to 128 letters/],
    ['apiGatewayLogsRole', 'yes', /apiGatewayLogsRole \(value 'yes'\)/],
  ])('refuses %s=%s at synth, naming the option and the value', (key, value, message) => {
    expect(() => createStack({ context: { [key]: value } })).toThrow(message);
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
          authMode: 'iam',
          alarmEmail: 'oncall@example.com',
          stageName: 'prod',
          apiGatewayLogsRole: 'false',
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
