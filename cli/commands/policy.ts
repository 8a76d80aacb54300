import { type Command, InvalidArgumentError, Option } from 'commander';
import { normalizeRoleArn } from '../../lib/auth/iam-caller.ts';
import type { IamPolicy, PolicyStore } from '../../lib/auth/policy-store.ts';
import { ENV } from '../../lib/config-env.ts';
import { NotFoundError } from '../../lib/domain/errors.ts';
import { formatNetwork } from '../../lib/domain/namespace-settings.ts';
import { isDns1123Subdomain } from '../../lib/domain/validation.ts';
import { formatTimestamp } from '../../lib/presentation/output.ts';
import { type DryRunMode, dryRunSuffix, writeNothingOption } from '../dry-run-option.ts';
import { LIST_FORMATS, type ListShape, printList } from '../list-printer.ts';
import { networksOption } from '../namespace-options.ts';
import { type OutputSpec, outputOption } from '../output-option.ts';
import {
  cutRevokedConnections,
  KEEP_CONNECTIONS_FLAG,
  previewRevokedConnections,
  type RevokeFlags,
  revokeOptions,
} from '../revoke-connections.ts';
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
    .addOption(networksOption("the role's entries here", false))
    .addOption(writeNothingOption())
    .action(
      async (
        options: {
          roleArn: string;
          namespace?: string;
          serviceAccount?: string;
          networks?: string[];
          dryRun: DryRunMode;
        },
        command: Command,
      ) => {
        await withPolicies(context, command, async (policies) => {
          const rule = {
            roleArn: options.roleArn,
            namespace: namespaceOf(options),
            createdAt: context.now(),
          };
          const dryRun = options.dryRun !== 'none';
          if (!dryRun)
            await policies.putPolicy({
              ...rule,
              ...(options.serviceAccount === undefined
                ? {}
                : { serviceAccount: options.serviceAccount }),
              ...(options.networks === undefined ? {} : { networks: options.networks }),
            });
          const scope = options.serviceAccount
            ? ` as service account "${options.serviceAccount}"`
            : '';
          const networks = options.networks
            ? `, in networks ${options.networks.map(formatNetwork).join(',')}`
            : '';
          const suffix = dryRun ? ` ${dryRunSuffix(options.dryRun)}` : '';
          context.out(
            `role ${rule.roleArn} may register in namespace "${rule.namespace}"${scope}${networks}${suffix}\n`,
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

  const revoke = policy
    .command('revoke')
    .description(
      "remove an allow rule: the role's next connect is refused, and the connections it authenticated in the namespace are closed",
    )
    .addOption(roleArnOption())
    .addOption(namespaceOption());
  for (const option of revokeOptions()) revoke.addOption(option);
  revoke
    .addHelpText(
      'after',
      `
The connections of the role's sessions in the namespace are closed through API Gateway's
management endpoint (--management-endpoint, ${ENV.connectionsUrl}, or the local runtime's), so
their entries leave now instead of when the connections end (up to 2 h later); their agents'
reconnects are refused (403). ${KEEP_CONNECTIONS_FLAG} only refuses new connects.`,
    )
    .action(
      async (options: RevokeFlags & { roleArn: string; namespace?: string }, command: Command) => {
        const namespace = namespaceOf(options);
        const credential = { kind: 'policy', roleArn: options.roleArn, namespace } as const;
        if (options.dryRun !== 'none') {
          let found = false;
          await withPolicies(context, command, async (policies) => {
            found = (await policies.getPolicy(options.roleArn, namespace)) !== undefined;
          });
          if (found) {
            context.out(
              `role ${options.roleArn} may no longer register in namespace "${namespace}" ${dryRunSuffix(options.dryRun)}\n`,
            );
          }
          // A revoke without a rule still closes what is open: so does its preview.
          await previewRevokedConnections(context, command, credential, options);
          if (!found) {
            throw new NotFoundError(
              `no policy for role ${options.roleArn} in namespace "${namespace}"; see registrar policy list`,
            );
          }
          return;
        }
        let deleted = false;
        await withPolicies(context, command, async (policies) => {
          deleted = await policies.deletePolicy(options.roleArn, namespace);
        });
        if (deleted) {
          context.out(
            `role ${options.roleArn} may no longer register in namespace "${namespace}"\n`,
          );
        }
        // Also when the rule was already gone: a revoke whose closing failed is run again.
        await cutRevokedConnections(
          context,
          command,
          credential,
          // No rule, no connect of the role could have been authorized since: no second look.
          deleted ? options : { ...options, settle: 0 },
        );
        if (!deleted) {
          throw new NotFoundError(
            `no policy for role ${options.roleArn} in namespace "${namespace}"; see registrar policy list`,
          );
        }
      },
    );
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
    wideHeaders: ['NETWORKS'],
    wideRow: (p) => [p.networks === undefined ? '<any>' : p.networks.map(formatNetwork).join(',')],
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
