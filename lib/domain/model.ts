/**
 * The registry's model, in Istio's own shape so that YAML written for Istio works unchanged
 * and a Kubernetes projection is a copy.
 */

export const ISTIO_API_VERSION = 'networking.istio.io/v1';
export const ACCEPTED_API_VERSIONS = [
  'networking.istio.io/v1',
  'networking.istio.io/v1beta1',
  'networking.istio.io/v1alpha3',
] as const;

/** Annotation keys Istio's auto-registration controller writes; a group can never set them. */
export const ANNOTATIONS = {
  autoRegistrationGroup: 'istio.io/autoRegistrationGroup',
  workloadController: 'istio.io/workloadController',
  connectedAt: 'istio.io/connectedAt',
  disconnectedAt: 'istio.io/disconnectedAt',
  healthChecksEnabled: 'proxy.istio.io/health-checks-enabled',
} as const;

export const SYSTEM_ANNOTATION_KEYS: readonly string[] = Object.values(ANNOTATIONS);

/** Agents may not set this label: locality comes from the locality field. */
export const LOCALITY_LABEL = 'istio-locality';

export const HEALTHY_CONDITION = 'Healthy';

/** Where an object without a namespace goes, as with kubectl. */
export const DEFAULT_NAMESPACE = 'default';

export type StringMap = Record<string, string>;

export interface ObjectRef {
  namespace: string;
  name: string;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name: string;
  namespace: string;
  uid?: string;
  labels?: StringMap;
  annotations?: StringMap;
  ownerReferences?: OwnerReference[];
  creationTimestamp?: string;
  generation?: number;
}

/** Kubernetes probe shape, as WorkloadGroup.spec.probe carries it. */
export interface Probe {
  initialDelaySeconds?: number;
  timeoutSeconds?: number;
  periodSeconds?: number;
  successThreshold?: number;
  failureThreshold?: number;
  httpGet?: {
    path?: string;
    port: number;
    host?: string;
    scheme?: 'HTTP' | 'HTTPS';
    httpHeaders?: { name: string; value: string }[];
  };
  tcpSocket?: { host?: string; port: number };
  exec?: { command: string[] };
}

/** The part of a WorkloadEntry that a WorkloadGroup's template provides. */
export interface WorkloadEntrySpec {
  address?: string;
  ports?: Record<string, number>;
  labels?: StringMap;
  network?: string;
  locality?: string;
  weight?: number;
  serviceAccount?: string;
}

export interface WorkloadGroup {
  apiVersion: string;
  kind: 'WorkloadGroup';
  metadata: ObjectMeta;
  spec: {
    metadata?: { labels?: StringMap; annotations?: StringMap };
    template: WorkloadEntrySpec;
    probe?: Probe;
  };
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastProbeTime?: string;
  lastTransitionTime?: string;
}

export interface WorkloadEntry {
  apiVersion: string;
  kind: 'WorkloadEntry';
  metadata: ObjectMeta;
  spec: WorkloadEntrySpec;
  status?: { conditions?: Condition[] };
}

/** Who connected, as the authorizer (never the agent) established it. */
export interface VerifiedIdentity {
  /** `token:<id>` in token mode, the caller's ARN in IAM mode. */
  principal: string;
  namespace?: string;
  serviceAccount?: string;
  /**
   * IAM mode with attestation: the EC2 instance named by an instance identity document whose
   * AWS signature verified and whose instanceId is the caller's role session name.
   */
  instanceId?: string;
  /**
   * The networks the caller's join token or IAM policy restricts it to (the empty string is
   * "no network"); unset, any. Checked on connect, never stored with the entry.
   */
  networks?: string[];
}

/** What an agent asks for when it connects (protocol v1 query parameters), already validated. */
export interface ConnectRequest {
  group: string;
  namespace: string;
  ips: string[];
  network?: string;
  locality?: string;
  labels: StringMap;
  /**
   * The agent's release, as it says (`agentVersion=`, from 0.2 on): recorded on the entry and
   * checked against the skew policy. Absent: a 0.1 agent.
   */
  agentVersion?: string;
}

/** Timestamps are epoch milliseconds in the domain; rendering turns them into RFC 3339. */
export type EpochMillis = number;

export function refOf(meta: { namespace: string; name: string }): ObjectRef {
  return { namespace: meta.namespace, name: meta.name };
}

export function formatRef(ref: ObjectRef): string {
  return `${ref.namespace}/${ref.name}`;
}

export function toRfc3339(at: EpochMillis): string {
  return new Date(at).toISOString();
}
