import type { Metrics } from '@aws-lambda-powertools/metrics';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  ConflictError,
  InvalidRequestError,
  NotFoundError,
  UnauthenticatedError,
} from '../../lib/domain/errors.ts';
import { logger, METRIC, metrics } from '../../lib/observability.ts';
import { errorsLoggedAndRethrown, errorsToResponses } from '../../lib/protocol/error-response.ts';

/** What the error middlewares counted: `name{Reason}` for the single metrics, `name` totals. */
let counted: string[] = [];
beforeEach(() => {
  counted = [];
  vi.spyOn(metrics, 'addMetric').mockImplementation((name) => {
    counted.push(name);
    return metrics;
  });
  vi.spyOn(metrics, 'singleMetric').mockImplementation(() => {
    let reason = '';
    return {
      addDimension: (_name: string, value: string) => {
        reason = value;
      },
      addMetric: (name: string) => {
        counted.push(`${name}{${reason}}`);
      },
    } as unknown as Metrics;
  });
});
afterEach(() => {
  vi.restoreAllMocks();
});

function failWith(error: unknown, middleware = errorsToResponses(logger)) {
  const request = { error, response: undefined } as never;
  middleware.onError?.(request);
  return request as { error: unknown; response?: { statusCode: number } };
}

class ProvisionedThroughputExceededException extends Error {
  override name = 'ProvisionedThroughputExceededException';
}

describe('refusals and faults are counted apart', () => {
  it.each([
    [new UnauthenticatedError(), 'Unauthenticated'],
    [new InvalidRequestError("missing query parameter 'ip'", 'ip'), 'InvalidRequest'],
    [new NotFoundError('cannot find WorkloadGroup shop/web'), 'NotFound'],
    [new ConflictError('hand-made entry'), 'Conflict'],
  ])('counts %s as Refused with its code, never as a fault', (error, reason) => {
    failWith(error);
    expect(counted).toEqual([`${METRIC.refused}{${reason}}`, METRIC.refused]);
  });

  it('counts an SDK error as a fault by its name', () => {
    const { response } = failWith(new ProvisionedThroughputExceededException('slow down'));
    expect(response?.statusCode).toBe(500);
    expect(counted).toEqual([
      `${METRIC.faults}{ProvisionedThroughputExceededException}`,
      METRIC.faults,
    ]);
  });

  it('counts a thrown non-error as an UnknownError fault', () => {
    failWith('a string');
    expect(counted).toEqual([`${METRIC.faults}{UnknownError}`, METRIC.faults]);
  });

  it("counts the authorizer's bad token as a refusal although it rethrows 'Unauthorized'", () => {
    const middleware = errorsLoggedAndRethrown(logger, () => new Error('Unauthorized'));
    const request = failWith(new UnauthenticatedError(), middleware);
    expect((request.error as Error).message).toBe('Unauthorized');
    expect(counted).toEqual([`${METRIC.refused}{Unauthenticated}`, METRIC.refused]);
  });

  it('counts a failed sweeper run as a fault', () => {
    failWith(new Error('table unreachable'), errorsLoggedAndRethrown(logger));
    expect(counted).toEqual([`${METRIC.faults}{Error}`, METRIC.faults]);
  });
});
