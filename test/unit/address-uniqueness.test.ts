import { describe, expect, it } from 'vitest';
import { claimDecision } from '../../lib/domain/address-uniqueness.ts';

const shop = (name: string) => ({ namespace: 'shop', name });
const holder = (over: Partial<Parameters<typeof claimDecision>[1]> = {}) => ({
  entry: shop('g1-10.0.0.1'),
  autoRegistered: true,
  connected: true,
  ...over,
});

describe('claimDecision', () => {
  it('keeps a connected holder against a claim on the agent word (first claim wins)', () => {
    expect(claimDecision({ entry: shop('g2-10.0.0.1') }, holder())).toEqual({
      replace: false,
      why: 'connected',
    });
  });

  it("replaces a disconnected holder of the claimant's namespace: the VM moved groups", () => {
    expect(claimDecision({ entry: shop('g2-10.0.0.1') }, holder({ connected: false }))).toEqual({
      replace: true,
      why: 'moved',
    });
  });

  it("never replaces another namespace's holder on the agent word, connected or not", () => {
    const evil = { entry: { namespace: 'evil', name: 'x-10.0.0.1' } };
    expect(claimDecision(evil, holder({ connected: false }))).toEqual({
      replace: false,
      why: 'other-namespace',
    });
    expect(claimDecision(evil, holder()).replace).toBe(false);
  });

  it('replaces any auto-registered holder for an attested claimant, and never a hand-made one', () => {
    const attested = { entry: shop('g2-10.0.0.1'), attestedInstanceId: 'i-0aaaaaaaaaaaaaaaa' };
    expect(claimDecision(attested, holder())).toEqual({ replace: true, why: 'attested' });
    expect(claimDecision(attested, holder({ autoRegistered: false }))).toEqual({
      replace: false,
      why: 'hand-made',
    });
  });

  it('refuses an attested claimant of another namespace against a connected holder: AWS signs the IP, not the network', () => {
    const evil = {
      entry: { namespace: 'evil', name: 'x-10.0.0.1' },
      attestedInstanceId: 'i-0eeeeeeeeeeeeeeee',
    };
    expect(claimDecision(evil, holder({ attestedInstanceId: 'i-0aaaaaaaaaaaaaaaa' }))).toEqual({
      replace: false,
      why: 'connected',
    });
    expect(claimDecision(evil, holder())).toEqual({ replace: false, why: 'connected' });
  });

  it("leaves another namespace's disconnected holder to its grace period, attested or not", () => {
    const evil = {
      entry: { namespace: 'evil', name: 'x-10.0.0.1' },
      attestedInstanceId: 'i-0eeeeeeeeeeeeeeee',
    };
    expect(claimDecision(evil, holder({ connected: false }))).toEqual({
      replace: false,
      why: 'other-namespace',
    });
  });

  it('lets the same attested instance move to another namespace, replacing its own entry', () => {
    const moved = {
      entry: { namespace: 'api', name: 'x-10.0.0.1' },
      attestedInstanceId: 'i-0aaaaaaaaaaaaaaaa',
    };
    expect(claimDecision(moved, holder({ attestedInstanceId: 'i-0aaaaaaaaaaaaaaaa' }))).toEqual({
      replace: true,
      why: 'attested',
    });
  });
});
