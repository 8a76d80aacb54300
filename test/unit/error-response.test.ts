import { describe, expect, it, vi } from 'vitest';

import {
  ConflictError,
  ForbiddenError,
  InvalidRequestError,
  NotFoundError,
  UnauthenticatedError,
} from '../../lib/domain/errors.ts';
import { logger } from '../../lib/observability.ts';
import { errorOutcome, errorsToResponses } from '../../lib/protocol/error-response.ts';

describe('errorOutcome', () => {
  it.each([
    [new InvalidRequestError("missing query parameter 'group'", 'group'), 400, 'InvalidRequest'],
    [new UnauthenticatedError(), 401, 'Unauthenticated'],
    [new ForbiddenError('not yours'), 403, 'Forbidden'],
    [new NotFoundError('cannot find WorkloadGroup shop/web'), 404, 'NotFound'],
    [new ConflictError('hand-made'), 409, 'Conflict'],
  ])('maps %s to its status, code and message', (error, statusCode, code) => {
    const outcome = errorOutcome(error);
    expect(outcome.statusCode).toBe(statusCode);
    expect(outcome.reply).toEqual({ ok: false, error: { code, message: error.message } });
    expect(outcome.expected).toBe(true);
  });

  it('turns any other error into a 500 that reveals nothing of it', () => {
    const outcome = errorOutcome(new Error('ResourceNotFoundException: table registry-prod'));
    expect(outcome.statusCode).toBe(500);
    expect(outcome.expected).toBe(false);
    expect(JSON.stringify(outcome.reply)).not.toContain('registry-prod');
    expect(outcome.reply.error.code).toBe('InternalError');
  });

  it('turns a thrown non-Error into a 500 as well', () => {
    expect(errorOutcome('boom').statusCode).toBe(500);
  });
});

describe('errorsToResponses', () => {
  function run(error: unknown, options?: { refusalsAsReplies?: boolean }) {
    const request = { error, response: undefined as unknown } as Parameters<
      NonNullable<ReturnType<typeof errorsToResponses>['onError']>
    >[0];
    errorsToResponses(logger, options).onError?.(request);
    return request.response as { statusCode: number; body: string };
  }

  it('answers a refused $connect with the status and an ok:false body', () => {
    const response = run(new NotFoundError('cannot find WorkloadGroup shop/web'));
    expect(response.statusCode).toBe(404);
    expect(JSON.parse(response.body)).toEqual({
      ok: false,
      error: { code: 'NotFound', message: 'cannot find WorkloadGroup shop/web' },
    });
  });

  it('delivers a refused message as a 200 reply the agent reads', () => {
    const response = run(new InvalidRequestError('bad'), { refusalsAsReplies: true });
    expect(response.statusCode).toBe(200);
    expect(JSON.parse(response.body).ok).toBe(false);
  });

  it('logs an unexpected error with its cause and still answers 500 on message routes', () => {
    const spy = vi.spyOn(logger, 'error').mockImplementation(() => undefined);
    const cause = new Error('socket hang up');
    const response = run(cause, { refusalsAsReplies: true });
    expect(response.statusCode).toBe(500);
    expect(spy).toHaveBeenCalledWith('unexpected error', cause);
    spy.mockRestore();
  });
});
