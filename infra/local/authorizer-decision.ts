/**
 * How API Gateway turns a Lambda REQUEST authorizer's outcome into an upgrade decision:
 * a thrown `Unauthorized` is a 401, a policy that does not allow `execute-api:Invoke` on the
 * method is a 403, a malformed result (or any other error) is a 500, and an Allow lets the
 * $connect route run with the authorizer's context attached to the connection.
 */

export type AuthorizerDecision =
  | { allow: true; principalId: string; context: Record<string, string> }
  | { allow: false; statusCode: 401 | 403 | 500; message: string; reason: string };

/** API Gateway's limit on what an authorizer may return. */
export const AUTHORIZER_RESULT_LIMIT_BYTES = 8 * 1024;

interface Statement {
  Effect?: unknown;
  Action?: unknown;
  Resource?: unknown;
}

export function decideFromError(error: unknown): AuthorizerDecision {
  // The documented way for a Lambda authorizer to answer 401 is to throw exactly this message.
  if (error instanceof Error && error.message === 'Unauthorized') {
    return {
      allow: false,
      statusCode: 401,
      message: 'Unauthorized',
      reason: 'authorizer threw Unauthorized',
    };
  }
  const detail = error instanceof Error ? error.message : String(error);
  return {
    allow: false,
    statusCode: 500,
    message: 'Internal server error',
    reason: `authorizer failed: ${detail}`,
  };
}

export function decideFromResult(result: unknown, methodArn: string): AuthorizerDecision {
  const malformed = (why: string): AuthorizerDecision => ({
    allow: false,
    statusCode: 500,
    message: 'Internal server error',
    reason: `authorizer result is malformed: ${why}`,
  });
  if (!isObject(result)) return malformed('not an object');
  if (JSON.stringify(result).length > AUTHORIZER_RESULT_LIMIT_BYTES) {
    return malformed(`larger than ${AUTHORIZER_RESULT_LIMIT_BYTES} bytes`);
  }
  const { principalId, policyDocument, context } = result;
  if (typeof principalId !== 'string') return malformed('principalId is not a string');
  if (!isObject(policyDocument) || !Array.isArray(policyDocument.Statement)) {
    return malformed('policyDocument.Statement is not an array');
  }
  const flat = flattenContext(context);
  if (typeof flat === 'string') return malformed(flat);

  const statements = (policyDocument.Statement as Statement[]).filter(
    (s) =>
      matchesAny(s.Action, 'execute-api:Invoke', true) && matchesAny(s.Resource, methodArn, false),
  );
  const effect = (s: Statement) => String(s.Effect).toLowerCase();
  // As in IAM, an explicit Deny wins over any Allow.
  if (
    statements.some((s) => effect(s) === 'deny') ||
    !statements.some((s) => effect(s) === 'allow')
  ) {
    return {
      allow: false,
      statusCode: 403,
      message: 'Forbidden',
      reason: 'authorizer policy denies $connect',
    };
  }
  return { allow: true, principalId, context: flat };
}

/**
 * The context may hold only strings, numbers and booleans; API Gateway hands them on to the
 * integration as strings. Objects and arrays make the authorizer fail (a 500), so they fail here.
 */
function flattenContext(context: unknown): Record<string, string> | string {
  if (context === undefined || context === null) return {};
  if (!isObject(context)) return 'context is not an object';
  const flat: Record<string, string> = {};
  for (const [key, value] of Object.entries(context)) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      flat[key] = String(value);
    } else if (value !== undefined && value !== null) {
      return `context.${key} is not a string, number or boolean`;
    }
  }
  return flat;
}

/** Actions compare case-insensitively in IAM, resources (ARNs) exactly. */
function matchesAny(patterns: unknown, value: string, ignoreCase: boolean): boolean {
  const list = Array.isArray(patterns) ? patterns : [patterns];
  return list.some(
    (pattern) => typeof pattern === 'string' && wildcard(pattern, ignoreCase).test(value),
  );
}

/** IAM-style wildcards: `*` any run of characters, `?` one character. */
function wildcard(pattern: string, ignoreCase: boolean): RegExp {
  const escaped = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  const source = `^${escaped.replace(/\*/g, '.*').replace(/\?/g, '.')}$`;
  return new RegExp(source, ignoreCase ? 'i' : '');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
