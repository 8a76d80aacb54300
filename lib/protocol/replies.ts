import type { Probe, WorkloadEntry } from '../domain/model.ts';

/** Replies of agent protocol v1; every reply but `pong` carries `ok`. */

export interface HealthAck {
  action: 'health';
  ok: true;
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
): DescribeReply {
  return { action: 'describe', ok: true, entry, probe: probe ?? null, connectionId };
}

export function pongReply(): PongReply {
  return { action: 'pong' };
}

export function errorReply(code: string, message: string): ErrorReply {
  return { ok: false, error: { code, message } };
}
