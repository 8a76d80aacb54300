import { InvalidArgumentError, Option } from 'commander';
import { NotFoundError } from '../../lib/domain/errors.ts';
import { DEFAULT_NAMESPACE, type ObjectRef } from '../../lib/domain/model.ts';
import { isDns1123Label } from '../../lib/domain/validation.ts';
import type { ResourceKind } from '../../lib/presentation/resource-items.ts';
import { UsageError } from './context.ts';

// What `get` shows of an object lives in lib/ (the dashboard server shows the same rows).
export {
  agentVersionCell,
  ageOf,
  COLUMNS,
  connectedStatus,
  entryItem,
  groupItem,
  healthyStatus,
  type ResourceItem,
  type ResourceKind,
  renderEntry,
  renderGroup,
} from '../../lib/presentation/resource-items.ts';

/** The names kubectl users type for the two resource types. */
const ALIASES: Record<string, ResourceKind> = {
  workloadgroups: 'WorkloadGroup',
  workloadgroup: 'WorkloadGroup',
  wg: 'WorkloadGroup',
  'workloadgroups.networking.istio.io': 'WorkloadGroup',
  workloadentries: 'WorkloadEntry',
  workloadentry: 'WorkloadEntry',
  we: 'WorkloadEntry',
  'workloadentries.networking.istio.io': 'WorkloadEntry',
};

export const PLURAL: Record<ResourceKind, string> = {
  WorkloadGroup: 'workloadgroups',
  WorkloadEntry: 'workloadentries',
};

/** `workloadgroup.networking.istio.io`, as kubectl names objects in its messages. */
export const QUALIFIED: Record<ResourceKind, string> = {
  WorkloadGroup: 'workloadgroup.networking.istio.io',
  WorkloadEntry: 'workloadentry.networking.istio.io',
};

export const RESOURCE_HELP = 'workloadgroups (wg) or workloadentries (we)';

export function resourceKind(text: string): ResourceKind {
  const kind = ALIASES[text.toLowerCase()];
  if (!kind) throw new UsageError(`unknown resource type '${text}'; use ${RESOURCE_HELP}`);
  return kind;
}

/** `-n` as commander parses it: a namespace is a DNS-1123 label. */
export function parseNamespace(text: string): string {
  if (!isDns1123Label(text)) {
    throw new InvalidArgumentError(
      "a namespace is lower case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters",
    );
  }
  return text;
}

export function namespaceOption(): Option {
  return new Option(
    '-n, --namespace <namespace>',
    `namespace (default "${DEFAULT_NAMESPACE}")`,
  ).argParser(parseNamespace);
}

export function namespaceOf(options: { namespace?: string }): string {
  return options.namespace ?? DEFAULT_NAMESPACE;
}

export function notFound(kind: ResourceKind, ref: ObjectRef): NotFoundError {
  return new NotFoundError(
    `${PLURAL[kind]} "${ref.name}" not found in namespace "${ref.namespace}"`,
  );
}

export function byNamespaceAndName<T>(meta: (item: T) => ObjectRef): (a: T, b: T) => number {
  return (a, b) => {
    const x = meta(a);
    const y = meta(b);
    return x.namespace.localeCompare(y.namespace) || x.name.localeCompare(y.name);
  };
}

/** The namespace a list shows (undefined: every one), as `get` reads -n and -A. */
export function listedNamespace(options: {
  namespace?: string;
  allNamespaces?: boolean;
}): string | undefined {
  if (options.namespace !== undefined && options.allNamespaces) {
    throw new UsageError('use either -n <namespace> or -A, not both');
  }
  return options.allNamespaces ? undefined : namespaceOf(options);
}
