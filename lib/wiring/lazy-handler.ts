import type { FunctionHandler } from '../function-dependencies.ts';

/**
 * The Lambda entry point for a handler factory and its wiring. Dependencies are built on the
 * first invocation, not at import: importing a function file (tests, the local runtime,
 * esbuild analysis) never reads the environment or throws on a missing variable, and a bad
 * configuration fails the invocation with the variable's name in the log.
 */
export function lazyHandler<TEvent, TResult, TDeps>(
  create: (deps: TDeps) => FunctionHandler<TEvent, TResult>,
  wire: (env: Record<string, string | undefined>) => TDeps,
): FunctionHandler<TEvent, TResult> {
  let handler: FunctionHandler<TEvent, TResult> | undefined;
  // async: a configuration error becomes a rejected invocation, like any other failure.
  return async (event, context) => {
    handler ??= create(wire(process.env));
    return handler(event, context);
  };
}
