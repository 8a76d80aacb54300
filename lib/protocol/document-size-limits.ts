import type { WorkloadEntry, WorkloadGroup } from '../domain/model.ts';

// What an object may weigh where it is stored. The parser (istio-documents.ts) refuses one over
// it with the rest of its input, so `apply` writes none of it; the limits are the store's (one
// DynamoDB item: lib/store/catalog-item-limits.ts), given to the parser by its caller, as the
// wire knows nothing of the table.

/** What a refusal says, and the field it names first (the largest). */
export interface SizeRefusal {
  field: string;
  message: string;
}

export interface DocumentSizeLimits {
  /** The group's stored item, and every entry its VMs would get, fit where they are stored. */
  groupSizeRefusal(group: WorkloadGroup): SizeRefusal | undefined;
  /** A hand-made entry's stored item fits where it is stored. */
  entrySizeRefusal(entry: WorkloadEntry): SizeRefusal | undefined;
}
