import { parseAllDocuments } from 'yaml';
import { isRecord } from './istio-document-problems.ts';

/** Splits a YAML or JSON input into the objects it holds, unwrapping Lists, before any schema. */

export interface RawDocument {
  raw: unknown;
  /** `document 2`, or `document 1 item 3` inside a List. */
  label: string;
  /** Position among the objects of the input, from 1. */
  index: number;
  /** Why the document is not YAML or JSON at all. */
  syntaxError?: string;
}

export function readDocuments(input: string): RawDocument[] {
  const result: RawDocument[] = [];
  parseAllDocuments(input).forEach((doc, at) => {
    const label = `document ${at + 1}`;
    const error = doc.errors[0];
    if (error) {
      // The first line carries the message and the position in the whole input.
      const syntaxError = (error.message.split('\n')[0] ?? '').replace(/:$/, '');
      result.push({ raw: undefined, label, index: result.length + 1, syntaxError });
      return;
    }
    const raw: unknown = doc.toJS();
    // An empty document (a trailing '---') is not an object to apply.
    if (raw === null || raw === undefined) return;
    // `get -o json|yaml` prints a List; accept it back, as kubectl does.
    if (isRecord(raw) && raw.kind === 'List' && Array.isArray(raw.items)) {
      raw.items.forEach((item: unknown, i: number) => {
        result.push({ raw: item, label: `${label} item ${i + 1}`, index: result.length + 1 });
      });
      return;
    }
    result.push({ raw, label, index: result.length + 1 });
  });
  return result;
}
