import { type Command, InvalidArgumentError, Option } from 'commander';
import { createJoinToken } from '../../lib/auth/join-token.ts';
import { ENV } from '../../lib/config-env.ts';
import { NotFoundError } from '../../lib/domain/errors.ts';
import { formatNetwork } from '../../lib/domain/namespace-settings.ts';
import type { StoredToken } from '../../lib/domain/stored-token.ts';
import { isDns1123Subdomain } from '../../lib/domain/validation.ts';
import { formatTimestamp } from '../../lib/presentation/output.ts';
import { type DryRunMode, dryRunSuffix, writeNothingOption } from '../dry-run-option.ts';
import { positiveDurationOption } from '../duration-option.ts';
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
import type { CommandRegistration } from './context.ts';
import { listedNamespace, namespaceOf, namespaceOption } from './resources.ts';

export const DEFAULT_TOKEN_TTL = '24h';

export const registerToken: CommandRegistration = (program, context) => {
  const token = program
    .command('token')
    .description('join tokens: what an agent presents to register a VM (token auth mode)');

  token
    .command('create')
    .description('create a join token and print it (shown only this once)')
    .addOption(namespaceOption())
    .addOption(
      new Option('--service-account <name>', 'only for entries of this service account').argParser(
        parseServiceAccount,
      ),
    )
    .addOption(
      positiveDurationOption(
        '--ttl <duration>',
        'how long the token is valid (units ms, s, m, h, d)',
        DEFAULT_TOKEN_TTL,
      ),
    )
    .addOption(networksOption('entries registered with this token', false))
    .addOption(writeNothingOption())
    .addHelpText(
      'after',
      '\nThe token is for the namespace of -n (default "default"), as every command: an agent with it\n' +
        'may register only into groups of that namespace (and, with --service-account, of that account).',
    )
    .action(
      async (
        options: {
          namespace?: string;
          serviceAccount?: string;
          ttl: number;
          networks?: string[];
          dryRun: DryRunMode;
        },
        command: Command,
      ) => {
        const { tokens, sweepPolicy } = await context.stores(command);
        const input = { namespace: namespaceOf(options), ttlMs: options.ttl, now: context.now() };
        if (options.dryRun !== 'none') {
          // No token: one printed by a dry run would be a secret nobody stored.
          const account = options.serviceAccount ?? '<any>';
          const networks = options.networks?.map(formatNetwork).join(',') ?? '<any>';
          const expires = formatTimestamp(input.now + input.ttlMs);
          context.out(
            `token for namespace "${input.namespace}" (service account ${account}, networks ${networks}, expires ${expires}) created ${dryRunSuffix(options.dryRun)}\n`,
          );
          return;
        }
        const created = createJoinToken(
          options.serviceAccount === undefined
            ? input
            : { ...input, serviceAccount: options.serviceAccount },
        );
        await tokens.putToken(
          options.networks === undefined
            ? created.stored
            : { ...created.stored, networks: options.networks },
        );
        // Only the token on stdout, so `TOKEN=$(registrar token create -n web)` works.
        context.out(`${created.token}\n`);
        // The mode the registrar recorded (its sweeper's last run, or npm start): a token made
        // for an IAM-mode registrar can never be used, and its agent would only be refused.
        const recorded = await sweepPolicy.read().catch(() => undefined);
        if (recorded?.authMode === 'iam') {
          context.io.stderr.write(
            `warning: this registrar runs in IAM mode (recorded ${new Date(recorded.recordedAt).toISOString()}): it never reads join tokens, so this one cannot be used; agents connect with --auth iam, allowed by registrar policy allow --role-arn <arn> -n ${input.namespace}\n`,
          );
        }
      },
    );

  token
    .command('list')
    .description('list join tokens (never their secrets)')
    .addOption(namespaceOption())
    .option('-A, --all-namespaces', 'list the tokens of every namespace')
    .addOption(outputOption(LIST_FORMATS))
    .option('--no-headers', 'print the table without its header row')
    .action(async (options: ListOptions, command: Command) => {
      const namespace = listedNamespace(options);
      const { tokens } = await context.stores(command);
      const now = context.now();
      const listed = (await tokens.listTokens())
        .filter((t) => namespace === undefined || t.namespace === namespace)
        .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
      printList(context, tokenShape(now, namespace), listed, options.output, {
        noHeaders: !options.headers,
      });
    });

  const revoke = token
    .command('revoke')
    .description(
      'revoke a join token: agents can no longer connect with it, and the connections it authenticated are closed',
    )
    .argument(
      '<id>',
      "the token's ID, as `token list` shows it (one made before 0.3.0 may begin with '-': give it after '--')",
    );
  for (const option of revokeOptions()) revoke.addOption(option);
  revoke
    .addHelpText(
      'after',
      `
The connections the token authenticated are closed through API Gateway's management endpoint
(--management-endpoint, ${ENV.connectionsUrl}, or the local runtime's), so their entries leave
now instead of when the connections end (up to 2 h later); their agents' reconnects are refused
(401). ${KEEP_CONNECTIONS_FLAG} only refuses new connects. Revoking a revoked token again closes
what is still open.`,
    )
    .action(async (id: string, options: RevokeFlags, command: Command) => {
      const { tokens } = await context.stores(command);
      const stored = await tokens.getToken(id);
      if (stored && options.dryRun !== 'none') {
        context.out(`token "${id}" revoked ${dryRunSuffix(options.dryRun)}\n`);
        const credential = { kind: 'token', id, namespace: stored.namespace } as const;
        await previewRevokedConnections(context, command, credential, options);
        return;
      }
      if (!stored || !(await tokens.revokeToken(id, context.now()))) {
        throw new NotFoundError(`token "${id}" not found; see registrar token list`);
      }
      context.out(`token "${id}" revoked\n`);
      await cutRevokedConnections(
        context,
        command,
        { kind: 'token', id, namespace: stored.namespace },
        options,
      );
    });
};

interface ListOptions {
  namespace?: string;
  allNamespaces?: boolean;
  output: OutputSpec;
  headers: boolean;
}

/** `token list`'s columns; the NAMESPACE column only across namespaces, as kubectl's. */
function tokenShape(now: number, namespace: string | undefined): ListShape<StoredToken> {
  const all = namespace === undefined;
  return {
    kind: 'token',
    headers: ['ID', ...(all ? ['NAMESPACE'] : []), 'SERVICE-ACCOUNT', 'EXPIRES', 'STATUS'],
    row: (t) => [
      t.id,
      ...(all ? [t.namespace] : []),
      t.serviceAccount ?? '<any>',
      formatTimestamp(t.expiresAt),
      tokenStatus(t, now),
    ],
    wideHeaders: ['CREATED', 'REVOKED', 'NETWORKS'],
    wideRow: (t) => [
      formatTimestamp(t.createdAt),
      t.revokedAt === undefined ? '<none>' : formatTimestamp(t.revokedAt),
      t.networks === undefined ? '<any>' : t.networks.map(formatNetwork).join(','),
    ],
    view: (t) => tokenView(t, now),
    name: (t) => t.id,
    empty: all ? 'No tokens found.' : `No tokens found in ${namespace} namespace.`,
  };
}

/** A token as `token list -o json|yaml` shows it: what the table shows, never the secret's hash. */
export function tokenView(token: StoredToken, now: number): Record<string, string> {
  const view: Record<string, string> = { id: token.id, namespace: token.namespace };
  if (token.serviceAccount !== undefined) view.serviceAccount = token.serviceAccount;
  view.createdAt = formatTimestamp(token.createdAt);
  view.expiresAt = formatTimestamp(token.expiresAt);
  if (token.revokedAt !== undefined) view.revokedAt = formatTimestamp(token.revokedAt);
  if (token.networks !== undefined) view.networks = token.networks.map(formatNetwork).join(',');
  view.status = tokenStatus(token, now);
  return view;
}

/** Revocation wins over expiry: it is the operator's explicit act. Expiry is exclusive. */
export function tokenStatus(token: StoredToken, now: number): 'active' | 'expired' | 'revoked' {
  if (token.revokedAt !== undefined) return 'revoked';
  return now >= token.expiresAt ? 'expired' : 'active';
}

function parseServiceAccount(text: string): string {
  if (!isDns1123Subdomain(text)) {
    throw new InvalidArgumentError(
      "a service account is lower case letters, digits, '-' and '.', at most 253 characters",
    );
  }
  return text;
}
