import type { EntryRecord } from '../domain/entry-record.ts';
import { type EpochMillis, toRfc3339 } from '../domain/model.ts';

/**
 * Server to agent (additive to protocol v1): an operator took the VM out of traffic
 * (`registrar cordon`) or put it back (`uncordon`). Pushed through API Gateway's management
 * API (`POST @connections/{id}`) when it happens, and repeated in the `describe` reply, so an
 * agent that reconnects (or missed the push) learns it again. It asks nothing of the agent:
 * the registrar keeps the entry out of traffic whatever the agent reports; the agent logs it
 * so whoever reads the VM's log knows why its traffic stopped.
 *
 * Agents that predate it ignore it: a message whose action answers none of their requests is
 * dropped (agent/connection.ts), and a field of `describe` they do not read is ignored.
 * `at` orders notices: a push delivered late, after a newer one, is older and ignored.
 */
export interface MaintenanceNotice {
  action: 'maintenance';
  /** True: out of traffic (Healthy False, reason Maintenance); false: back in traffic. */
  cordoned: boolean;
  /** The operator's message (while cordoned). */
  message?: string;
  /** When the operator cordoned or uncordoned it (RFC 3339). */
  at: string;
}

export function cordonNotice(at: EpochMillis, message: string): MaintenanceNotice {
  return { action: 'maintenance', cordoned: true, message, at: toRfc3339(at) };
}

export function uncordonNotice(at: EpochMillis): MaintenanceNotice {
  return { action: 'maintenance', cordoned: false, at: toRfc3339(at) };
}

/** What `describe` repeats: the entry's cordon, or its last uncordon; none if never cordoned. */
export function maintenanceOf(record: EntryRecord): MaintenanceNotice | undefined {
  if (record.cordon) return cordonNotice(record.cordon.at, record.cordon.message);
  if (record.uncordonedAt !== undefined) return uncordonNotice(record.uncordonedAt);
  return undefined;
}
