import { Option } from 'commander';
import * as z from 'zod';
import { ENV } from '../lib/config.ts';
import { UsageError } from './commands/context.ts';
import type { Target } from './target.ts';

/**
 * `delete` closes the connections that held the entries it deleted (`DELETE @connections/{id}`
 * on API Gateway's management API): the agent sees its connection close, reconnects within a
 * second, and registers again from the group's current template, or, when the group went too,
 * is refused until it is applied again. Without the close the agent would hold a connection
 * the registry no longer counts, its VM out of the mesh until the next rotation (up to 2 h).
 */

export const MANAGEMENT_ENDPOINT_FLAG = '--management-endpoint';

export function managementEndpointOption(): Option {
  return new Option(
    `${MANAGEMENT_ENDPOINT_FLAG} <url>`,
    `API Gateway's management endpoint (the stack output ManagementEndpoint, https://<api>.execute-api.<region>.amazonaws.com/<stage>; default ${ENV.connectionsUrl}, or the local runtime's): the connections of deleted entries are closed through it, so their agents register again at once`,
  );
}

/** Where connections are closed: the flag, the functions' own variable, or `npm start`'s local.json. */
export function managementEndpoint(
  flag: string | undefined,
  env: Record<string, string | undefined>,
  target: Target,
): string | undefined {
  const fromEnv = env[ENV.connectionsUrl] || undefined;
  const given = flag || fromEnv;
  if (given === undefined) return target.managementUrl;
  if (!z.url().safeParse(given).success) {
    const source = flag ? MANAGEMENT_ENDPOINT_FLAG : ENV.connectionsUrl;
    throw new UsageError(
      `invalid ${source} '${given}': must be a URL such as https://abc123.execute-api.eu-west-1.amazonaws.com/v1 (the stack output ManagementEndpoint)`,
    );
  }
  return given;
}

export interface Holder {
  /** The entry as the output names it: `workloadentry "web-10.0.0.12"`. */
  entry: string;
  connectionId: string;
}

export interface ClosedHolders {
  closed: number;
  /** Already gone (410): nothing to tell the agent. */
  gone: number;
  /** Not closed (no endpoint, or the call failed): their agents do not notice. */
  open: number;
}

/** Calls in flight at once: a group's cascade may close thousands; each call is one HTTP request. */
const CONCURRENCY = 16;

/**
 * What a warning says about connections left open: whose they are, and what that leaves.
 * `delete` (the default): the deleted entries' agents do not notice; `revoke`: the revoked
 * credential's connections keep their entries.
 */
export interface ClosingWords {
  /** "of the deleted entry was" / "of the deleted entries were" */
  whose: (n: number) => string;
  /** What an open connection means, with its agent's `it`/`they`. */
  consequence: (n: number) => string;
}

export const DELETE_WORDS: ClosingWords = {
  whose: (n) => (n === 1 ? 'of the deleted entry was' : 'of the deleted entries were'),
  consequence: (n) =>
    `${n === 1 ? 'its agent' : 'their agents'} will not notice until ${n === 1 ? 'it reconnects' : 'they reconnect'} (up to 2 h)`,
};

/**
 * Closes `holders`, says on stderr which could not be and why; nothing when there are none.
 * With no endpoint the entries are deleted all the same and one warning names the flag.
 */
export async function closeHolders(
  holders: readonly Holder[],
  endpoint: string | undefined,
  region: string,
  warn: (line: string) => void,
  words: ClosingWords = DELETE_WORDS,
): Promise<ClosedHolders> {
  const result: ClosedHolders = { closed: 0, gone: 0, open: 0 };
  if (holders.length === 0) return result;
  if (endpoint === undefined) {
    result.open = holders.length;
    warn(
      `warning: ${count(holders.length, 'connection')} ${words.whose(holders.length)} not closed: ` +
        `${words.consequence(holders.length)}; ` +
        `pass ${MANAGEMENT_ENDPOINT_FLAG} <url> (the stack output ManagementEndpoint) or set ${ENV.connectionsUrl}`,
    );
    return result;
  }
  // Loaded here: the SDK takes a while to import, and most deletes close nothing.
  const { ManagementApiDisconnect } = await import('../lib/gateway/management-api-disconnect.ts');
  const api = new ManagementApiDisconnect({ endpoint, region });
  try {
    const queue = [...holders];
    const lane = async () => {
      for (let holder = queue.shift(); holder; holder = queue.shift()) {
        const answer = await api.close(holder.connectionId);
        if (answer === 'closed') result.closed += 1;
        else if (answer === 'gone') result.gone += 1;
        else {
          result.open += 1;
          warn(
            `warning: could not close connection ${holder.connectionId} of ${holder.entry} at ${endpoint}: ${answer.failed}; ` +
              `${words.consequence(1)}${hint(answer.failed)}`,
          );
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, holders.length) }, lane));
  } finally {
    api.destroy();
  }
  return result;
}

function hint(failure: string): string {
  return /AccessDenied|Forbidden|not authorized/i.test(failure)
    ? '; the caller needs execute-api:ManageConnections on the WebSocket API'
    : '';
}

export function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
