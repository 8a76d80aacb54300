import type { Template } from 'aws-cdk-lib/assertions';

export interface Statement {
  Action: string | string[];
  Resource: unknown;
  Effect: string;
}

/**
 * The statements of the policies attached to a role, found by the role's construct path
 * (logical IDs start with the path's IDs: `Functions/Connect/Role` -> `FunctionsConnectRole`).
 */
export function statementsOfRole(template: Template, rolePath: string): Statement[] {
  const prefix = rolePath.replaceAll('/', '');
  const policies = template.findResources('AWS::IAM::Policy');
  const statements: Statement[] = [];
  for (const policy of Object.values(policies)) {
    const roles: { Ref?: string }[] = policy.Properties.Roles ?? [];
    if (!roles.some((role) => role.Ref?.startsWith(prefix))) continue;
    statements.push(...policy.Properties.PolicyDocument.Statement);
  }
  if (statements.length === 0) throw new Error(`no policy attached to a role under ${rolePath}`);
  return statements;
}

export function actionsOf(statements: Statement[]): string[] {
  return statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action])).sort();
}
