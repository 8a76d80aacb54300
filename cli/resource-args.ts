import { UsageError } from './commands/context.ts';
import { RESOURCE_HELP, type ResourceKind, resourceKind } from './commands/resources.ts';

/** What a command line names: per resource type, in the order given, its names (none: all). */
export interface ResourceRequest {
  kind: ResourceKind;
  names: string[];
}

/**
 * Reads resource arguments as kubectl does: `TYPE [NAME...]`, `TYPE1,TYPE2 [NAME...]`, or
 * `TYPE/NAME...` (each argument in that form, types may differ), e.g. `get we/web-10.0.0.12`.
 */
export function parseResourceArgs(verb: string, args: readonly string[]): ResourceRequest[] {
  const [first, ...rest] = args;
  if (first === undefined) {
    throw new UsageError(`you must specify the type of resource to ${verb}: ${RESOURCE_HELP}`);
  }
  const requests: ResourceRequest[] = [];
  const add = (kind: ResourceKind, name?: string) => {
    let request = requests.find((r) => r.kind === kind);
    if (!request) {
      request = { kind, names: [] };
      requests.push(request);
    }
    if (name !== undefined && !request.names.includes(name)) request.names.push(name);
  };
  if (first.includes('/')) {
    for (const arg of args) {
      const slash = arg.indexOf('/');
      if (slash === -1) {
        throw new UsageError(
          `there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'registrar ${verb} we/NAME' instead of 'registrar ${verb} we we/NAME'); got '${arg}'`,
        );
      }
      const name = arg.slice(slash + 1);
      if (name === '' || name.includes('/')) {
        throw new UsageError(`'${arg}' is not TYPE/NAME, such as we/web-10.0.0.12 or wg/web`);
      }
      add(resourceKind(arg.slice(0, slash)), name);
    }
    return requests;
  }
  for (const name of rest) {
    if (name.includes('/')) {
      throw new UsageError(
        `there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'registrar ${verb} ${name}' instead of 'registrar ${verb} ${first} ${name}')`,
      );
    }
  }
  for (const type of first.split(',')) {
    if (type === '')
      throw new UsageError(`'${first}': an empty resource type; use ${RESOURCE_HELP}`);
    add(resourceKind(type));
    for (const name of rest) add(resourceKind(type), name);
  }
  return requests;
}

/** Whether any object was named (rather than listed). */
export function namesObjects(requests: readonly ResourceRequest[]): boolean {
  return requests.some((request) => request.names.length > 0);
}
