import { describe, expect, it } from 'vitest';
import {
  asList,
  columnWidths,
  formatAge,
  formatLabels,
  formatRows,
  formatTable,
  formatTimestamp,
  toJson,
} from '../../lib/presentation/output.ts';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

describe('formatAge', () => {
  // The cases of apimachinery's duration.HumanDuration, which `kubectl get` uses for AGE.
  it.each([
    [0, '0s'],
    [5 * SECOND, '5s'],
    [119 * SECOND, '119s'],
    [2 * MINUTE, '2m'],
    [5 * MINUTE + 30 * SECOND, '5m30s'],
    [10 * MINUTE + 30 * SECOND, '10m'],
    [179 * MINUTE, '179m'],
    [3 * HOUR, '3h'],
    [7 * HOUR + 59 * MINUTE, '7h59m'],
    [8 * HOUR + 30 * MINUTE, '8h'],
    [47 * HOUR, '47h'],
    [4 * DAY + 5 * HOUR, '4d5h'],
    [4 * DAY, '4d'],
    [8 * DAY + 5 * HOUR, '8d'],
    [729 * DAY, '729d'],
    [2 * 365 * DAY + 10 * DAY, '2y10d'],
    [9 * 365 * DAY, '9y'],
  ])('shows %d ms as %s', (elapsed, expected) => {
    expect(formatAge(NOW - elapsed, NOW)).toBe(expected);
  });

  it('treats up to a second in the future as now (clock skew)', () => {
    expect(formatAge(NOW + 1500, NOW)).toBe('0s');
  });

  it('marks a time further in the future as invalid', () => {
    expect(formatAge(NOW + 2 * SECOND, NOW)).toBe('<invalid>');
  });

  it('shows an unknown creation time as unknown', () => {
    expect(formatAge(undefined, NOW)).toBe('<unknown>');
  });
});

describe('formatTable', () => {
  it('pads columns to the widest cell, three spaces apart, without trailing spaces', () => {
    const table = formatTable(
      ['NAME', 'ADDRESS', 'AGE'],
      [
        ['web-10-0-0-1', '10.0.0.1', '5s'],
        ['db', '192.168.100.200', '3m'],
      ],
    );
    expect(table).toBe(
      'NAME           ADDRESS           AGE\n' +
        'web-10-0-0-1   10.0.0.1          5s\n' +
        'db             192.168.100.200   3m\n',
    );
  });

  it('prints only the header for no rows', () => {
    expect(formatTable(['ID', 'STATUS'], [])).toBe('ID   STATUS\n');
  });

  it('prints later rows under the columns of the first table, as get --watch does', () => {
    const widths = columnWidths([
      ['NAME', 'ADDRESS', 'AGE'],
      ['web-1', '10.0.0.1', '5s'],
    ]);
    expect(widths).toEqual([5, 8, 3]);
    expect(formatRows([['db', '10.0.0.5', '1s']], widths)).toBe('db      10.0.0.5   1s\n');
    // A longer cell pushes only its own row.
    expect(formatRows([['web-10-0-0-2', '10.0.0.2', '0s']], widths)).toBe(
      'web-10-0-0-2   10.0.0.2   0s\n',
    );
  });
});

describe('json and lists', () => {
  it('wraps several objects in a v1 List, as kubectl does', () => {
    expect(asList([{ kind: 'WorkloadEntry' }])).toEqual({
      apiVersion: 'v1',
      kind: 'List',
      items: [{ kind: 'WorkloadEntry' }],
    });
  });

  it('indents JSON by four spaces and ends with a newline', () => {
    expect(toJson({ a: 1 })).toBe('{\n    "a": 1\n}\n');
  });
});

describe('small formats', () => {
  it('prints timestamps in whole seconds', () => {
    expect(formatTimestamp(Date.parse('2026-03-01T12:00:00.123Z'))).toBe('2026-03-01T12:00:00Z');
  });

  it('prints labels in one cell, or <none>', () => {
    expect(formatLabels({ app: 'web', tier: 'front' })).toBe('app=web,tier=front');
    expect(formatLabels({})).toBe('<none>');
  });
});
