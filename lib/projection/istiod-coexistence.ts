import { ANNOTATIONS, type StringMap } from '../domain/model.ts';

/**
 * The registrar's own annotation keys on the cluster copy of a WorkloadEntry, one for each of
 * istiod's controller keys the registry record carries. They say what Istio's keys said.
 *
 * Why the cluster copy cannot carry istiod's keys: istiod's auto-registration controller
 * (istio/istio `pilot/pkg/autoregistration/controller.go`, `periodicWorkloadEntryCleanup` and
 * `shouldCleanupEntry`) runs on every istiod replica, lists every WorkloadEntry of the cluster
 * every 10 x `PILOT_WORKLOAD_ENTRY_GRACE_PERIOD`, and takes an entry for its own when it has
 * `istio.io/autoRegistrationGroup` (then it deletes it once `istio.io/connectedAt` is older than
 * 1.5 x its keepalive max connection age, or `istio.io/disconnectedAt` older than its grace) or
 * `istio.io/workloadController` with a `Healthy` condition (then it removes the condition).
 * With either key, a live VM's entry would be deleted by istiod every cleanup cycle once its
 * connection is older than 45 minutes (Helm's defaults), and a crashed VM's entry 10 s after
 * the crash, whatever grace the registrar keeps. Without both, `shouldCleanupEntry` returns
 * false at any age and for any istiod setting, and istiod's only use of the entry is routing.
 */
export const REGISTRAR_ANNOTATIONS = {
  autoRegistrationGroup: 'workload-registrar.mesh/auto-registration-group',
  workloadController: 'workload-registrar.mesh/workload-controller',
  connectedAt: 'workload-registrar.mesh/connected-at',
  disconnectedAt: 'workload-registrar.mesh/disconnected-at',
} as const;

/**
 * istiod names a WorkloadEntry's workload (its telemetry's `destination_workload`, the canonical
 * service's fallback) from `istio.io/autoRegistrationGroup`, else from this metadata label
 * (`WorkloadNameFromWorkloadEntry` in istio/istio `pkg/kube/labels`). The cluster copy sets it
 * to the group, so the workload name stays the group's without istiod's controller key.
 */
export const WORKLOAD_NAME_LABEL = 'service.istio.io/workload-name';

const RENAMED: ReadonlyArray<readonly [string, string]> = [
  [ANNOTATIONS.autoRegistrationGroup, REGISTRAR_ANNOTATIONS.autoRegistrationGroup],
  [ANNOTATIONS.workloadController, REGISTRAR_ANNOTATIONS.workloadController],
  [ANNOTATIONS.connectedAt, REGISTRAR_ANNOTATIONS.connectedAt],
  [ANNOTATIONS.disconnectedAt, REGISTRAR_ANNOTATIONS.disconnectedAt],
];

/** istiod's controller keys, which no object the registrar puts in a cluster carries. */
export const ISTIOD_CONTROLLER_KEYS: readonly string[] = RENAMED.map(([istio]) => istio);

/**
 * The annotations of the cluster copy: each of istiod's controller keys under the registrar's
 * own key, everything else (`proxy.istio.io/health-checks-enabled` included: istiod's routing
 * rule reads it) as it is. Undefined when nothing is left, as Istio writes no empty map.
 */
export function clusterAnnotations(annotations: StringMap | undefined): StringMap | undefined {
  if (annotations === undefined) return undefined;
  const out: StringMap = { ...annotations };
  for (const [istio, registrar] of RENAMED) {
    const value = out[istio];
    delete out[istio];
    if (value !== undefined) out[registrar] = value;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** The metadata labels of the cluster copy: the workload name label set to the group unless given. */
export function clusterLabels(labels: StringMap, group: string | undefined): StringMap {
  if (group === undefined || labels[WORKLOAD_NAME_LABEL] !== undefined) return labels;
  return { ...labels, [WORKLOAD_NAME_LABEL]: group };
}
