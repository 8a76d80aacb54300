import { groupsComeFromClusterMessage } from '../lib/domain/group-source.ts';
import type { ObjectRef, WorkloadGroup } from '../lib/domain/model.ts';
import { identityChanges } from '../lib/domain/template-rollout.ts';
import { InvalidDocumentsError, type IstioDocument } from '../lib/protocol/istio-documents.ts';
import { paceOf, ROLLOUT_PACE_ANNOTATION } from '../lib/rollout/rollout-pace.ts';
import type { Stores } from './commands/context.ts';

/**
 * What `apply` and `delete` of a group check beyond the document: where groups come from, the
 * rollout pace annotation, and template changes a rollout does not bring to live entries.
 */

/**
 * Groups come from the cluster: a group applied or deleted here would be undone by the next
 * sync, so the command refuses (before anything is written) and says where to make the change.
 */
export async function groupChangeRefusals(
  stores: Pick<Stores, 'groupSource'>,
  groups: readonly ObjectRef[],
  verb: 'apply' | 'delete',
): Promise<string[]> {
  if (groups.length === 0) return [];
  const recorded = await stores.groupSource.read();
  const source = recorded?.source;
  if (source?.kind !== 'cluster') return [];
  return groups.map((group) => groupsComeFromClusterMessage(verb, group, source));
}

/** The rollout pace annotation must read, or the input is refused (nothing written). */
export function checkPaceAnnotations(documents: readonly IstioDocument[]): void {
  const problems: string[] = [];
  for (const document of documents) {
    if (document.kind !== 'WorkloadGroup') continue;
    const { problem } = paceOf(document.group);
    if (problem) {
      problems.push(
        `document ${document.index} (WorkloadGroup ${document.group.metadata.name}): metadata.annotations.${ROLLOUT_PACE_ANNOTATION}: ${problem.replace(/^invalid [^ ]+ /, 'invalid value ')}`,
      );
    }
  }
  if (problems.length > 0) throw new InvalidDocumentsError(problems);
}

/**
 * A change of the template's service account or network is not rolled out: it would change a
 * live entry's identity (istiod issues a VM's certificate for its service account) or its
 * name and the network the mesh reaches it on. The operator is told, with what to do.
 */
export function identityWarnings(
  before: WorkloadGroup | undefined,
  after: WorkloadGroup,
): string[] {
  const { namespace, name } = after.metadata;
  return identityChanges(before, after).map(
    (change) =>
      `warning: workloadgroup ${namespace}/${name}: ${change.field} changed from ${shown(change.from)} to ${shown(change.to)}; ` +
      `live entries keep theirs (a running VM's identity and name never change under it) and take the new one when they register again ` +
      `(registrar delete we NAME -n ${namespace} closes a VM's connection: it re-registers at once); ` +
      `registrar get wg ${name} -n ${namespace} shows how many entries are on an older template`,
  );
}

function shown(value: string | undefined): string {
  return value === undefined ? '<none>' : `'${value}'`;
}
