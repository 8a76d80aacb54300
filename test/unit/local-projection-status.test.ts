import { describe, expect, it } from 'vitest';
import { projectionStatus } from '../../infra/local/projection-status.ts';
import { emptyReport, type ProjectionReport } from '../../lib/projection/report.ts';

const target = { cluster: 'kind-mesh', server: 'https://127.0.0.1:6443' };

function recorder() {
  const lines: [string, string, Record<string, unknown>][] = [];
  const status = projectionStatus(target, {
    info: (message, fields) => lines.push(['info', message, fields]),
    warn: (message, fields) => lines.push(['warn', message, fields]),
  });
  return { lines, status };
}

const failed = (...messages: string[]): ProjectionReport => ({
  ...emptyReport(false),
  errors: messages.map((message) => ({ target: 'istio' as const, message })),
});

describe('projectionStatus', () => {
  it('tells a failing cluster once, again only when the cause changes, and its recovery once', () => {
    const { lines, status } = recorder();
    const refused = 'list WorkloadEntry: fetch failed (connect ECONNREFUSED 127.0.0.1:6443)';
    status.report(failed(refused));
    status.report(failed(refused));
    status.report(failed(refused));
    status.report(failed('list WorkloadEntry: the API server answered 403 Forbidden: no'));
    status.report(emptyReport(false));
    status.report(emptyReport(false));
    expect(lines).toEqual([
      ['warn', 'projection failing', { ...target, cause: refused }],
      [
        'warn',
        'projection failing',
        { ...target, cause: 'list WorkloadEntry: the API server answered 403 Forbidden: no' },
      ],
      ['info', 'projection recovered', target],
    ]);
  });

  it('counts the other errors of a run in the one line', () => {
    const { lines, status } = recorder();
    status.report(failed('a', 'b', 'a', 'c'));
    expect(lines).toEqual([
      ['warn', 'projection failing', { ...target, cause: 'a (and 2 other error(s))' }],
    ]);
  });

  it('tells a reconcile that threw as a failure too', () => {
    const { lines, status } = recorder();
    status.failed(new Error('registry unreachable'));
    status.failed(new Error('registry unreachable'));
    expect(lines).toEqual([
      ['warn', 'projection failing', { ...target, cause: 'registry unreachable' }],
    ]);
  });

  it('tells each change, and an entry that cannot be projected only when it starts to be one', () => {
    const { lines, status } = recorder();
    const problem = {
      kind: 'WorkloadEntry' as const,
      namespace: 'shop',
      name: 'web-10.0.0.1',
      message: 'no ports',
    };
    const run: ProjectionReport = {
      ...emptyReport(false),
      changes: [{ kind: 'WorkloadEntry', action: 'created', namespace: 'shop', name: 'web-a' }],
      problems: [problem],
    };
    status.report(run);
    status.report({ ...run, changes: [] });
    expect(lines).toEqual([
      [
        'info',
        'projected',
        { ...target, kind: 'WorkloadEntry', action: 'created', namespace: 'shop', name: 'web-a' },
      ],
      [
        'warn',
        'entry not projected',
        { ...target, kind: 'WorkloadEntry', entry: 'shop/web-10.0.0.1', reason: 'no ports' },
      ],
    ]);
  });
});
