import type { Heartbeat } from '../domain/heartbeat.ts';
import type { Probe, WorkloadEntry } from '../domain/model.ts';
import type { MaintenanceNotice } from './maintenance-notice.ts';

/** Replies of agent protocol v1; every reply but `pong` carries `ok`. */

export interface HealthAck {
  action: 'health';
  ok: true;
  /** Fields of the message this registrar did not read (a newer agent's): no effect. */
  ignoredFields?: string[];
}

export interface DescribeReply {
  action: 'describe';
  ok: true;
  entry: WorkloadEntry;
  /** The group's probe, so the agent learns what to run; null when the group has none. */
  probe: Probe | null;
  /**
   * The gateway's id of the connection that asked: the agent logs it, so its lines can be
   * matched with the registrar's (the console, CloudWatch). API Gateway tells a client its
   * id neither in the upgrade nor in any frame of its own.
   */
  connectionId: string;
  /**
   * Additive: present when an operator cordoned the entry (or uncordoned it since), so an
   * agent that reconnects learns it again (maintenance-notice.ts).
   */
  maintenance?: MaintenanceNotice;
  /** The registrar's release, so an agent knows what it talks to (docs/agent.md). */
  registrarVersion?: string;
  /**
   * Additive: how often the agent pings, and how many pings may be missed before the
   * registrar closes the connection as silent (its group's heartbeat, or the default 300 x 2).
   * An older agent ignores it and keeps its 5-minute ping, which the default bound allows.
   */
  heartbeat?: { intervalSeconds: number; misses: number };
  /** Fields of the message this registrar did not read (a newer agent's): no effect. */
  ignoredFields?: string[];
}

export interface PongReply {
  action: 'pong';
}

export interface ErrorReply {
  ok: false;
  error: { code: string; message: string };
}

export type AgentReply = HealthAck | DescribeReply | PongReply | ErrorReply;

export function healthAck(): HealthAck {
  return { action: 'health', ok: true };
}

export function describeReply(
  entry: WorkloadEntry,
  probe: Probe | undefined,
  connectionId: string,
  maintenance?: MaintenanceNotice,
  heartbeat?: Heartbeat,
): DescribeReply {
  const reply: DescribeReply = {
    action: 'describe',
    ok: true,
    entry,
    probe: probe ?? null,
    connectionId,
  };
  if (maintenance) reply.maintenance = maintenance;
  if (heartbeat) {
    reply.heartbeat = {
      intervalSeconds: heartbeat.intervalMs / 1000,
      misses: heartbeat.misses,
    };
  }
  return reply;
}

/** Names the ignored fields in a reply, when there are any (additive: older agents skip it). */
export function withIgnoredFields<T extends HealthAck | DescribeReply>(
  reply: T,
  ignoredFields: readonly string[],
): T {
  return ignoredFields.length === 0 ? reply : { ...reply, ignoredFields: [...ignoredFields] };
}

export function pongReply(): PongReply {
  return { action: 'pong' };
}

export function errorReply(code: string, message: string): ErrorReply {
  return { ok: false, error: { code, message } };
}
