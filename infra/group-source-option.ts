import type { Node } from 'constructs';
import type { GroupSource } from '../lib/domain/group-source.ts';
import { LABEL_SELECTOR } from '../lib/rollout/rollout-config.ts';
import { StackOptionsError } from './stack-options.ts';

/** The context keys (`cdk deploy -c groupSource=cluster -c groupSelector=registrar=on`). */
export const GROUP_SOURCE_OPTION_KEYS = {
  source: 'groupSource',
  selector: 'groupSelector',
  syncMinutes: 'groupSyncMinutes',
} as const;

export interface GroupSourceOptions {
  source: GroupSource;
  /** Groups from the cluster: how often the projector lists them (EventBridge, whole minutes). */
  syncMinutes: number;
}

/**
 * Where WorkloadGroups come from, validated at synth: `registry` (default) or `cluster`, which
 * needs the projector (its cluster) and may name a label selector. A bad value fails the synth
 * with the option's name and value.
 */
export function resolveGroupSource(node: Node, projectorDeployed: boolean): GroupSourceOptions {
  const read = (key: string) => {
    const value = node.tryGetContext(key);
    return value === undefined || value === '' ? undefined : String(value);
  };
  const fail = (key: string, value: string, problem: string) =>
    new StackOptionsError(
      `invalid stack option ${key} (value '${value}'): ${problem}; set it with cdk deploy -c ${key}=<value>`,
    );
  const source = read(GROUP_SOURCE_OPTION_KEYS.source) ?? 'registry';
  const selector = read(GROUP_SOURCE_OPTION_KEYS.selector);
  const minutesText = read(GROUP_SOURCE_OPTION_KEYS.syncMinutes) ?? '1';
  if (source !== 'registry' && source !== 'cluster') {
    throw fail(GROUP_SOURCE_OPTION_KEYS.source, source, "must be 'registry' or 'cluster'");
  }
  if (source === 'cluster' && !projectorDeployed) {
    throw fail(
      GROUP_SOURCE_OPTION_KEYS.source,
      source,
      'groups from the cluster need the projector: set projectorClusterName, projectorEndpoint and projectorCertificateAuthority (docs/kubernetes.md)',
    );
  }
  if (selector !== undefined) {
    if (source !== 'cluster') {
      throw fail(
        GROUP_SOURCE_OPTION_KEYS.selector,
        selector,
        'applies only with groupSource=cluster',
      );
    }
    if (!LABEL_SELECTOR.test(selector)) {
      throw fail(
        GROUP_SOURCE_OPTION_KEYS.selector,
        selector,
        'must be a Kubernetes label selector such as registrar=on,tier!=canary',
      );
    }
  }
  const syncMinutes = Number(minutesText);
  if (!Number.isInteger(syncMinutes) || syncMinutes < 1 || syncMinutes > 60) {
    throw fail(
      GROUP_SOURCE_OPTION_KEYS.syncMinutes,
      minutesText,
      'must be whole minutes from 1 to 60',
    );
  }
  return {
    source:
      source === 'cluster'
        ? { kind: 'cluster', ...(selector ? { selector } : {}) }
        : { kind: 'registry' },
    syncMinutes,
  };
}
