/**
 * The file in which the local runtime (infra/local/refusal-tally.ts) keeps its count of refused
 * requests for the dashboard server (refusals.ts) to read: the contract between the two, here
 * so that neither imports the other.
 */

/** Written beside `local.json` while the runtime runs; removed when it stops. */
export const REFUSALS_FILE = 'refusals.json';

/** The file's content: per minute (the bucket's start), the count of each reason. */
export interface RefusalTallyFile {
  startedAt: number;
  bucketMs: number;
  buckets: [number, Record<string, number>][];
}
