import { type Command, InvalidArgumentError, Option } from 'commander';
import { createJoinToken } from '../../lib/auth/join-token.ts';
import { ENV } from '../../lib/config-env.ts';
import { NotFoundError } from '../../lib/domain/errors.ts';
import { isDns1123Subdomain } from '../../lib/domain/validation.ts';
import type { StoredToken } from '../../lib/store/token-store.ts';
import { positiveDurationOption } from '../duration-option.ts';
import { asList, formatTable, formatTimestamp, toJson, toYaml } from '../output.ts';
import { type OutputSpec, outputOption } from '../output-option.ts';
import {
  cutRevokedConnections,
  KEEP_CONNECTIONS_FLAG,
  type RevokeFlags,
  revokeOptions,
} from '../revoke-connections.ts';
import type { CommandRegistration } from './context.ts';
import { namespaceOf, namespaceOption } from './resources.ts';

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
    .addHelpText(
      'after',
      '\nThe token is for the namespace of -n (default "default"), as every command: an agent with it\n' +
        'may register only into groups of that namespace (and, with --service-account, of that account).',
    )
    .action(
      async (
        options: { namespace?: string; serviceAccount?: string; ttl: number },
        command: Command,
      ) => {
        const { tokens } = await context.stores(command);
        const input = { namespace: namespaceOf(options), ttlMs: options.ttl, now: context.now() };
        const created = createJoinToken(
          options.serviceAccount === undefined
            ? input
            : { ...input, serviceAccount: options.serviceAccount },
        );
        await tokens.putToken(created.stored);
        // Only the token on stdout, so `TOKEN=$(registrar token create -n web)` works.
        context.out(`${created.token}\n`);
      },
    );

  token
    .command('list')
    .description('list join tokens (never their secrets)')
    .addOption(outputOption(['json', 'yaml']))
    .action(async (options: { output: OutputSpec }, command: Command) => {
      const { tokens } = await context.stores(command);
      const now = context.now();
      const listed = (await tokens.listTokens()).sort(
        (a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id),
      );
      if (options.output.format !== 'table') {
        const list = asList(listed.map((t) => tokenView(t, now)));
        context.out(options.output.format === 'json' ? toJson(list) : toYaml(list));
        return;
      }
      const rows = listed.map((t) => [
        t.id,
        t.namespace,
        t.serviceAccount ?? '<any>',
        formatTimestamp(t.expiresAt),
        tokenStatus(t, now),
      ]);
      if (rows.length === 0) {
        context.io.stderr.write('No tokens found.\n');
        return;
      }
      context.out(formatTable(['ID', 'NAMESPACE', 'SERVICE-ACCOUNT', 'EXPIRES', 'STATUS'], rows));
    });

  const revoke = token
    .command('revoke')
    .description(
      'revoke a join token: agents can no longer connect with it, and the connections it authenticated are closed',
    )
    .argument('<id>', "the token's ID, as `token list` shows it");
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

/** A token as `token list -o json|yaml` shows it: what the table shows, never the secret's hash. */
export function tokenView(token: StoredToken, now: number): Record<string, string> {
  const view: Record<string, string> = { id: token.id, namespace: token.namespace };
  if (token.serviceAccount !== undefined) view.serviceAccount = token.serviceAccount;
  view.createdAt = formatTimestamp(token.createdAt);
  view.expiresAt = formatTimestamp(token.expiresAt);
  if (token.revokedAt !== undefined) view.revokedAt = formatTimestamp(token.revokedAt);
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
