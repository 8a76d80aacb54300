import { DEFAULT_NAMESPACE } from '../../lib/protocol/istio-documents.ts';
import { resolveTarget, type TargetFlags } from '../target.ts';
import type { CliContext } from './context.ts';

/** What Tab may offer from the registry: object names of the line's type, and namespaces. */
export interface RegistryCandidates {
  names: string[];
  namespaces: string[];
}

/** A completion must answer while the user waits at Tab; a slow registry offers nothing. */
const READ_BUDGET_MS = 2000;

const ENTRY_TYPES = new Set(['we', 'workloadentry', 'workloadentries']);
const GROUP_TYPES = new Set(['wg', 'workloadgroup', 'workloadgroups']);

/**
 * Reads, for the words of the line being completed (`get we -n shop ''`), the registry that
 * line targets (its --table/--endpoint/--region, else the usual target) and returns the names
 * of that namespace's objects of the line's type and every namespace. Any failure (no
 * registry, no credentials, too slow) offers nothing rather than an error in the shell.
 */
export async function completionCandidates(
  context: CliContext,
  words: readonly string[],
): Promise<RegistryCandidates> {
  const none: RegistryCandidates = { names: [], namespaces: [] };
  const line = parseLine(words);
  let timer: NodeJS.Timeout | undefined;
  try {
    const read = async (): Promise<RegistryCandidates> => {
      const target = await resolveTarget(line.flags, context.io.env, context.io.cwd);
      const [{ createDocumentClient }, { DynamoDbCatalog }] = await Promise.all([
        import('../../lib/store/dynamodb-client.ts'),
        import('../../lib/store/dynamodb-catalog.ts'),
      ]);
      const client = createDocumentClient(
        target.endpoint
          ? { region: target.region, endpoint: target.endpoint }
          : { region: target.region },
      );
      try {
        const catalog = new DynamoDbCatalog(client, target.tableName);
        const namespace = line.namespace ?? DEFAULT_NAMESPACE;
        const [namespaces, names] = await Promise.all([
          catalog.listNamespaces().then((list) => list.namespaces),
          line.type === 'WorkloadEntry'
            ? catalog.listEntries(namespace).then((l) => l.map((r) => r.entry.metadata.name))
            : line.type === 'WorkloadGroup'
              ? catalog.listGroups(namespace).then((l) => l.map((g) => g.group.metadata.name))
              : Promise.resolve([]),
        ]);
        return { names: names.sort(), namespaces: namespaces.sort() };
      } finally {
        client.destroy();
      }
    };
    const late = new Promise<RegistryCandidates>((resolve) => {
      timer = setTimeout(() => resolve(none), READ_BUDGET_MS);
    });
    return await Promise.race([read(), late]);
  } catch {
    return none;
  } finally {
    clearTimeout(timer);
  }
}

interface Line {
  flags: TargetFlags;
  namespace?: string;
  type?: 'WorkloadEntry' | 'WorkloadGroup';
}

/** The target flags, the namespace and the resource type the words name. */
function parseLine(words: readonly string[]): Line {
  const line: Line = { flags: {} };
  const positional: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const word = words[i] as string;
    const [flag, inline] = word.startsWith('-') ? splitFlag(word) : [undefined, undefined];
    if (flag === undefined) {
      positional.push(word);
      continue;
    }
    const value = () => inline ?? words[++i];
    if (flag === '-n' || flag === '--namespace') line.namespace = value() || undefined;
    else if (flag === '--table') line.flags.table = value();
    else if (flag === '--endpoint') line.flags.endpoint = value();
    else if (flag === '--region') line.flags.region = value();
  }
  // `rollout status|pause|resume` takes only groups: its first argument is `wg/NAME` or `wg`.
  if (positional[0] === 'rollout') {
    line.type = 'WorkloadGroup';
    return line;
  }
  const type = positional[1]?.split('/')[0]?.toLowerCase();
  if (type && ENTRY_TYPES.has(type)) line.type = 'WorkloadEntry';
  if (type && GROUP_TYPES.has(type)) line.type = 'WorkloadGroup';
  return line;
}

function splitFlag(word: string): [string, string | undefined] {
  const at = word.indexOf('=');
  return at === -1 ? [word, undefined] : [word.slice(0, at), word.slice(at + 1)];
}
