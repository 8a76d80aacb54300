import { type Command, InvalidArgumentError, Option } from 'commander';
import { normalizeRoleArn } from '../../lib/auth/iam-caller.ts';
import { NotFoundError } from '../../lib/domain/errors.ts';
import { isDns1123Subdomain } from '../../lib/domain/validation.ts';
import type { IamPolicy, PolicyStore } from '../../lib/store/policy-store.ts';
import { LIST_FORMATS, type ListShape, printList } from '../list-printer.ts';
import { formatTimestamp } from '../output.ts';
import { type OutputSpec, outputOption } from '../output-option.ts';
import { resolveTarget, type TargetFlags } from '../target.ts';
import type { CliContext, CommandRegistration } from './context.ts';
import { listedNamespace, namespaceOf, namespaceOption } from './resources.ts';

/**
 * `registrar policy`: IAM mode's allow rules. A stack deployed with authMode=iam lets an EC2
 * instance connect only if its instance role is allowed for the namespace it registers in;
 * nothing is allowed by default.
 */
export const registerPolicy: CommandRegistration = (program, context) => {
  const policy = program
    .command('policy')
    .description('IAM auth mode: which IAM roles may register VMs in which namespace');

  policy
    .command('allow')
    .description("allow sessions of an IAM role (an EC2 instance profile's role) to register")
    .addOption(roleArnOption())
    .addOption(namespaceOption())
    .addOption(
      new Option(
        '--service-account <name>',
        'only into groups running as this service account',
      ).argParser(parseServiceAccount),
    )
    .action(
      async (
        options: { roleArn: string; namespace?: string; serviceAccount?: string },
        command: Command,
      ) => {
        await withPolicies(context, command, async (policies) => {
          const rule = {
            roleArn: options.roleArn,
            namespace: namespaceOf(options),
            createdAt: context.now(),
          };
          await policies.putPolicy(
            options.serviceAccount === undefined
              ? rule
              : { ...rule, serviceAccount: options.serviceAccount },
          );
          const scope = options.serviceAccount
            ? ` as service account "${options.serviceAccount}"`
            : '';
          context.out(
            `role ${rule.roleArn} may register in namespace "${rule.namespace}"${scope}\n`,
          );
        });
      },
    );

  policy
    .command('list')
    .description('list the IAM allow rules')
    .addOption(namespaceOption())
    .option('-A, --all-namespaces', 'list the rules of every namespace')
    .addOption(outputOption(LIST_FORMATS))
    .option('--no-headers', 'print the table without its header row')
    .action(
      async (
        options: {
          namespace?: string;
          allNamespaces?: boolean;
          output: OutputSpec;
          headers: boolean;
        },
        command: Command,
      ) => {
        const namespace = listedNamespace(options);
        await withPolicies(context, command, async (policies) => {
          const listed = (await policies.listPolicies())
            .filter((p) => namespace === undefined || p.namespace === namespace)
            .sort(
              (a, b) =>
                a.roleArn.localeCompare(b.roleArn) || a.namespace.localeCompare(b.namespace),
            );
          printList(context, policyShape(namespace), listed, options.output, {
            noHeaders: !options.headers,
          });
        });
      },
    );

  policy
    .command('revoke')
    .description('remove an allow rule: the next connect of that role is refused (entries stay)')
    .addOption(roleArnOption())
    .addOption(namespaceOption())
    .action(async (options: { roleArn: string; namespace?: string }, command: Command) => {
      await withPolicies(context, command, async (policies) => {
        const namespace = namespaceOf(options);
        if (!(await policies.deletePolicy(options.roleArn, namespace))) {
          throw new NotFoundError(
            `no policy for role ${options.roleArn} in namespace "${namespace}"; see registrar policy list`,
          );
        }
        context.out(`role ${options.roleArn} may no longer register in namespace "${namespace}"\n`);
      });
    });
};

/** `policy list`'s columns; the NAMESPACE column only across namespaces, as kubectl's. */
function policyShape(namespace: string | undefined): ListShape<IamPolicy> {
  const all = namespace === undefined;
  return {
    kind: 'policy',
    headers: ['ROLE', ...(all ? ['NAMESPACE'] : []), 'SERVICE-ACCOUNT', 'CREATED'],
    row: (p) => [
      p.roleArn,
      ...(all ? [p.namespace] : []),
      p.serviceAccount ?? '<any>',
      formatTimestamp(p.createdAt),
    ],
    view: (p) => ({ ...p, createdAt: formatTimestamp(p.createdAt) }),
    name: (p) => `${p.roleArn}#${p.namespace}`,
    empty: all
      ? 'No policies found: no IAM caller may register.'
      : `No policies found in ${namespace} namespace: no IAM caller may register there.`,
  };
}

function roleArnOption(): Option {
  return new Option('--role-arn <arn>', 'the IAM role, arn:aws:iam::<account>:role/<name>')
    .argParser((text: string) => {
      try {
        return normalizeRoleArn(text);
      } catch (error) {
        throw new InvalidArgumentError((error as Error).message);
      }
    })
    .makeOptionMandatory();
}

function parseServiceAccount(text: string): string {
  if (!isDns1123Subdomain(text)) {
    throw new InvalidArgumentError(
      "a service account is lower case letters, digits, '-' and '.', at most 253 characters",
    );
  }
  return text;
}

/**
 * The policy store of the registry the global options name (--table/--endpoint/--region, as
 * every command). Its own client, loaded on use like the other stores, closed afterwards.
 */
async function withPolicies(
  context: CliContext,
  command: Command,
  use: (policies: PolicyStore) => Promise<void>,
): Promise<void> {
  const target = await resolveTarget(
    command.optsWithGlobals<TargetFlags>(),
    context.io.env,
    context.io.cwd,
  );
  const [{ createDocumentClient }, { DynamoDbPolicyStore }] = await Promise.all([
    import('../../lib/store/dynamodb-client.ts'),
    import('../../lib/store/dynamodb-policy-store.ts'),
  ]);
  const client = createDocumentClient(
    target.endpoint
      ? { region: target.region, endpoint: target.endpoint }
      : { region: target.region },
  );
  try {
    await use(new DynamoDbPolicyStore(client, target.tableName));
  } finally {
    client.destroy();
  }
}
