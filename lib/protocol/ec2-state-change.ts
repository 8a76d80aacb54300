import { InvalidRequestError } from '../domain/errors.ts';

/**
 * EventBridge's "EC2 Instance State-change Notification" (source `aws.ec2`):
 *   { "detail-type": "EC2 Instance State-change Notification", "source": "aws.ec2",
 *     "time": "2025-06-01T12:00:00Z", "detail": { "instance-id": "i-0abc...", "state": "terminated" } }
 */
export interface Ec2StateChangeEvent {
  'detail-type'?: string;
  source?: string;
  time?: string;
  detail?: { 'instance-id'?: unknown; state?: unknown };
}

/** The states EC2 reports for an instance. */
export const EC2_STATES = [
  'pending',
  'running',
  'stopping',
  'stopped',
  'shutting-down',
  'terminated',
] as const;
export type Ec2State = (typeof EC2_STATES)[number];

export interface InstanceStateChange {
  instanceId: string;
  state: Ec2State;
  /** When EC2 reported it (epoch ms); undefined when the event has no time. */
  at: number | undefined;
}

export function parseEc2StateChange(event: Ec2StateChangeEvent): InstanceStateChange {
  const instanceId = event.detail?.['instance-id'];
  const state = event.detail?.state;
  if (typeof instanceId !== 'string' || !/^i-[0-9a-f]{8,17}$/.test(instanceId)) {
    throw new InvalidRequestError(
      `EC2 state-change event without a valid detail.instance-id (got '${String(instanceId)}'); expected i- and 8 or 17 hex digits`,
      'instance-id',
    );
  }
  if (typeof state !== 'string' || !(EC2_STATES as readonly string[]).includes(state)) {
    throw new InvalidRequestError(
      `EC2 state-change event with an unknown detail.state '${String(state)}'; expected one of ${EC2_STATES.join(', ')}`,
      'state',
    );
  }
  const time = event.time === undefined ? Number.NaN : Date.parse(event.time);
  return {
    instanceId,
    state: state as Ec2State,
    at: Number.isFinite(time) ? time : undefined,
  };
}

/** The event EventBridge would deliver, for the CLI's `registrar ec2-event --instance-id`. */
export function ec2StateChangeEvent(instanceId: string, state: string, at: number) {
  return {
    version: '0',
    id: `local-${at}`,
    'detail-type': 'EC2 Instance State-change Notification',
    source: 'aws.ec2',
    account: '000000000000',
    time: new Date(at).toISOString(),
    region: 'us-east-1',
    resources: [`arn:aws:ec2:us-east-1:000000000000:instance/${instanceId}`],
    detail: { 'instance-id': instanceId, state },
  };
}
