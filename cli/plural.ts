/**
 * "1 entry", "2 entries", "0 candidates": a count and its noun, singular only for one, so no
 * message reads "1 candidates read".
 */
export function countOf(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
