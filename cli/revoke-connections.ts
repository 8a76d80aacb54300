import { type Command, InvalidArgumentError, Option } from 'commander';
import {
  type CutConnection,
  connectionsAuthenticatedBy,
  describeCredential,
  type RevokedCredential,
} from '../lib/auth/revocation.ts';
import { DEFAULTS } from '../lib/config-env.ts';
import { parseDuration } from '../lib/domain/duration.ts';
import { formatRef } from '../lib/domain/model.ts';
import {
  type ClosingWords,
  closeHolders,
  count,
  managementEndpoint,
  managementEndpointOption,
} from './close-holders.ts';
import type { CliContext } from './commands/context.ts';
import { type DryRunMode, dryRunSuffix, writeNothingOption } from './dry-run-option.ts';

/**
 * `token revoke` and `policy revoke` cut what the credential holds (lib/auth/revocation.ts):
 * after the revocation is stored (so every reconnect is refused), the live connections the
 * credential authenticated are closed through API Gateway's management endpoint
 * (`DELETE @connections/{id}`, as `delete we` does), and their entries leave as VMs that
 * stopped. Twice: at once, and again once every connect that was authorized before the
 * revocation has had time to finish (API Gateway's 29 s integration timeout: a `$connect`
 * whose authorizer passed a moment before the revoke may write its holder after the first
 * look).
 */

export const KEEP_CONNECTIONS_FLAG = '--keep-connections';

export interface RevokeFlags {
  keepConnections?: boolean;
  dryRun: DryRunMode;
  managementEndpoint?: string;
  settle: number;
}

export function revokeOptions(): Option[] {
  return [
    new Option(
      KEEP_CONNECTIONS_FLAG,
      'only refuse new connects: connections it authenticated stay open (and their entries connected) until they end, up to 2 h',
    ),
    managementEndpointOption(),
    new Option(
      '--settle <duration>',
      'look again this long after the revocation for connects that were in flight (0: do not)',
    )
      .argParser(parseSettle)
      .default(parseDuration(DEFAULTS.connectSettle), DEFAULTS.connectSettle),
    writeNothingOption(),
  ];
}

function parseSettle(text: string): number {
  const ms = text.trim() === '0' ? 0 : parseDuration(text);
  if (ms === undefined || ms < 0) {
    throw new InvalidArgumentError('must be 0 or a duration such as 30s');
  }
  return ms;
}

const REVOKE_WORDS: ClosingWords = {
  whose: (n) => `it authenticated ${n === 1 ? 'was' : 'were'}`,
  consequence: (n) =>
    `${n === 1 ? 'it keeps its entry' : 'they keep their entries'} connected until ${n === 1 ? 'it ends' : 'they end'} (up to 2 h)`,
};

/**
 * `--dry-run` of a revoke: the connections `credential` authenticated that the revoke would
 * close (read from the registry as the revoke reads them), one line each; nothing is closed.
 */
export async function previewRevokedConnections(
  context: CliContext,
  command: Command,
  credential: RevokedCredential,
  flags: RevokeFlags,
): Promise<void> {
  const suffix = dryRunSuffix(flags.dryRun);
  const what = describeCredential(credential);
  if (flags.keepConnections) {
    context.out(`connections ${what} authenticated would stay open ${suffix}\n`);
    return;
  }
  const { heldEntries } = await context.stores(command);
  const found = await connectionsAuthenticatedBy(heldEntries, credential);
  for (const connection of found) {
    context.out(
      `connection ${connection.connectionId} of workloadentry "${formatRef(connection.entry)}" closed ${suffix}\n`,
    );
  }
  if (found.length === 0) context.out(`no connection ${what} authenticated is open ${suffix}\n`);
}

/** Closes the connections `credential` authenticated; says what it did on stdout/stderr. */
export async function cutRevokedConnections(
  context: CliContext,
  command: Command,
  credential: RevokedCredential,
  flags: RevokeFlags,
): Promise<void> {
  const what = describeCredential(credential);
  if (flags.keepConnections) {
    context.out(
      `connections ${what} authenticated stay open until they end (${KEEP_CONNECTIONS_FLAG}); their reconnects are refused\n`,
    );
    return;
  }
  const { heldEntries } = await context.stores(command);
  const target = context.target();
  if (target === undefined) throw new Error('the registry target is not resolved');
  const endpoint = managementEndpoint(flags.managementEndpoint, context.io.env, target);
  const seen = new Set<string>();
  const cut = async () => {
    const found = (await connectionsAuthenticatedBy(heldEntries, credential)).filter(
      (connection) => !seen.has(connection.connectionId),
    );
    for (const connection of found) seen.add(connection.connectionId);
    const holders = found.map((connection: CutConnection) => ({
      entry: `workloadentry "${formatRef(connection.entry)}"`,
      connectionId: connection.connectionId,
    }));
    const warn = (line: string) => context.io.stderr.write(`${line}\n`);
    const result = await closeHolders(holders, endpoint, target.region, warn, REVOKE_WORDS);
    if (result.closed > 0) {
      const entries = new Set(found.map((connection) => formatRef(connection.entry))).size;
      context.out(
        `closed ${count(result.closed, 'connection')} ${what} authenticated (${entries} ${entries === 1 ? 'entry' : 'entries'}): ${result.closed === 1 ? 'its entry leaves' : 'their entries leave'} once disconnected; reconnects are refused\n`,
      );
    }
  };
  await cut();
  // Without an endpoint nothing can be closed: the first look's warning said so.
  if (flags.settle > 0 && endpoint !== undefined) {
    context.io.stderr.write(
      `looking again in ${formatSettle(flags.settle)} for connects authorized before the revocation (--settle 0 skips this)\n`,
    );
    await new Promise((resolve) => setTimeout(resolve, flags.settle));
    await cut();
  }
}

function formatSettle(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
