import { describe, expect, it } from 'vitest';
import { dependenciesFromEnv } from '../../lib/dependencies.ts';
import type { Dependencies } from '../../lib/function-dependencies.ts';
import { connectDependencies } from '../../lib/wiring/connect.ts';
import { disconnectDependencies } from '../../lib/wiring/disconnect.ts';
import { ec2StateChangeDependencies } from '../../lib/wiring/ec2-state-change.ts';
import { messageDependencies } from '../../lib/wiring/message.ts';
import { sweeperDependencies } from '../../lib/wiring/sweeper.ts';
import { NO_CAPABILITIES } from '../fixtures/no-capabilities.ts';

/**
 * A capability a function can go without (IAM mode's policies, API Gateway's word on a
 * connection, the closer, the notifier...) is a member every Dependencies record names, absent
 * or not: a wiring that forgets one fails to compile, where an optional member let the feature
 * quietly do nothing (issue 45). Building a wiring opens no connection.
 */
const TOKEN_MODE_WITHOUT_GATEWAY = {
  REGISTRAR_TABLE: 'registry',
  REGISTRAR_DYNAMODB_ENDPOINT: 'http://127.0.0.1:1',
};

describe('each function wiring names every capability it may go without', () => {
  it('says absent, not nothing, for what token mode and no management endpoint leave out', () => {
    const env = TOKEN_MODE_WITHOUT_GATEWAY;
    const wired: [string, object, string[]][] = [
      ['connect', connectDependencies(env), ['attestation', 'terminatedInstances']],
      ['disconnect', disconnectDependencies(env), ['liveness']],
      ['message', messageDependencies(env), ['closeConnection']],
      ['ec2-state-change', ec2StateChangeDependencies(env), ['terminatedInstances']],
      ['sweeper', sweeperDependencies(env), ['liveness', 'closeConnection', 'notifyConnection']],
    ];
    for (const [name, deps, absent] of wired) {
      for (const key of absent) {
        expect([name, key, Object.hasOwn(deps, key)]).toEqual([name, key, true]);
        expect([name, key, (deps as Record<string, unknown>)[key]]).toEqual([name, key, undefined]);
      }
    }
    // The local runtime's whole record names all of them.
    const whole = dependenciesFromEnv(env);
    for (const key of Object.keys(NO_CAPABILITIES)) {
      expect([key, Object.hasOwn(whole, key)]).toEqual([key, true]);
    }
  });

  it('wires what IAM mode and a management endpoint bring', () => {
    const env = {
      ...TOKEN_MODE_WITHOUT_GATEWAY,
      REGISTRAR_CONNECTIONS_URL: 'http://127.0.0.1:1/v1',
    };
    const sweeper = sweeperDependencies(env);
    expect(sweeper.liveness).toBeDefined();
    expect(sweeper.closeConnection).toBeTypeOf('function');
    expect(sweeper.notifyConnection).toBeTypeOf('function');
    expect(disconnectDependencies(env).liveness).toBeDefined();
  });

  it('does not compile a record that leaves one out', () => {
    const { liveness: _left, ...rest } = dependenciesFromEnv(TOKEN_MODE_WITHOUT_GATEWAY);
    // @ts-expect-error: 'liveness' is missing (tsc fails here if it ever becomes optional).
    const forgotten: Dependencies = rest;
    expect(Object.hasOwn(forgotten, 'liveness')).toBe(false);
  });
});
