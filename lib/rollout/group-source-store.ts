import type { GroupSource } from '../domain/group-source.ts';
import type { EpochMillis } from '../domain/model.ts';

// The port of where the registrar takes its WorkloadGroups from: the rollout function records
// it every run (functions/rollout.ts), clients read it (`registrar apply` refuses a group when
// the cluster is the source); lib/store/dynamodb-group-source.ts implements it.

export interface RecordedGroupSource {
  source: GroupSource;
  recordedAt: EpochMillis;
}

export interface GroupSourceStore {
  /** The recorded source; undefined when none was: the registry is the source. */
  read(): Promise<RecordedGroupSource | undefined>;
  /** Records the source when it changed; two writers of the same one end 'unchanged'. */
  record(source: GroupSource, now: EpochMillis): Promise<'recorded' | 'unchanged'>;
}
