import { countFault, logger } from '../observability.ts';
import type { HistoryLost } from '../store/dynamodb-entry-history.ts';

/** A deletion whose history item cannot be written: logged and counted, never silent. */
export const reportHistoryLost: HistoryLost = (ref, deletion, error) => {
  logger.warn('the deletion of an entry was not recorded in its history', {
    entry: `${ref.namespace}/${ref.name}`,
    reason: deletion.reason,
    cause: error instanceof Error ? error.message : String(error),
  });
  countFault('HistoryNotRecorded');
};
