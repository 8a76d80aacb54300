import { InvalidArgumentError } from 'commander';
import {
  type LabelSelector,
  LabelSelectorError,
  parseLabelSelector as parseSelector,
} from '../lib/presentation/label-selector.ts';

// The parser lives in lib/ (the dashboard server reads `?selector=` with it too); the CLI adds
// only commander's usage error.
export {
  type LabelSelector,
  matchesSelector,
  type Requirement,
  SELECTOR_HELP,
} from '../lib/presentation/label-selector.ts';

/** As commander's argParser: an invalid selector is a usage error naming the requirement. */
export function parseLabelSelector(text: string): LabelSelector {
  try {
    return parseSelector(text);
  } catch (error) {
    if (error instanceof LabelSelectorError) throw new InvalidArgumentError(error.message);
    throw error;
  }
}
