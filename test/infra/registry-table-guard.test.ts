import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { synthVariant, TEMPLATE_VARIANTS } from '../../scripts/template-variants.ts';

/**
 * The guard against a silent table replacement: the registry table's logical ID and every
 * property whose change makes CloudFormation replace an AWS::DynamoDB::Table (the template
 * reference marks them "Update requires: Replacement") are compared with a checked-in snapshot.
 * A rename of the construct, a moved construct or a new key schema fails here, before a deploy
 * can create an empty table and orphan the real one.
 */
interface TableSnapshot {
  logicalId: string;
  type: string;
  replacementForcing: Record<string, unknown>;
}

const SNAPSHOT: TableSnapshot = JSON.parse(
  readFileSync(new URL('./registry-table.snapshot.json', import.meta.url), 'utf8'),
);

/** The token variant (the default deploy) as a template. */
function tokenTemplate(): Template {
  const token = TEMPLATE_VARIANTS.find((variant) => variant.name === 'token');
  if (!token) throw new Error('no token variant');
  return synthVariant(token) as Template;
}

type Template = {
  Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
};

/** What in `template` differs from the snapshot in a way that would replace the table. */
function replacementRisks(template: Template, snapshot: TableSnapshot): string[] {
  const tables = Object.entries(template.Resources).filter(([, r]) => r.Type === snapshot.type);
  const table = template.Resources[snapshot.logicalId];
  if (!table || table.Type !== snapshot.type) {
    const found = tables.map(([id]) => id).join(', ') || 'none';
    return [
      `no ${snapshot.type} '${snapshot.logicalId}' (tables: ${found}): a new logical ID creates a new, empty table`,
    ];
  }
  const risks = tables.length === 1 ? [] : [`${tables.length} tables, expected 1`];
  for (const [property, expected] of Object.entries(snapshot.replacementForcing)) {
    const actual = table.Properties?.[property] ?? null;
    if (JSON.stringify(actual) !== JSON.stringify(expected)) {
      risks.push(`${property} is ${JSON.stringify(actual)}, was ${JSON.stringify(expected)}`);
    }
  }
  return risks;
}

describe('registry table replacement guard', () => {
  it.each(TEMPLATE_VARIANTS.map((variant) => [variant.name, variant] as const))(
    'the %s variant keeps the table the snapshot names',
    (_name, variant) => {
      const risks = replacementRisks(synthVariant(variant) as Template, SNAPSHOT);
      expect(risks, SNAPSHOT.logicalId).toEqual([]);
    },
  );

  it('catches a renamed construct, a fixed name and a new key schema', () => {
    const original = tokenTemplate().Resources[SNAPSHOT.logicalId];
    if (!original) throw new Error(`no ${SNAPSHOT.logicalId}`);
    const table = structuredClone(original);

    const moved = { Resources: { RegistryTable2ABCDEF0: table } };
    expect(replacementRisks(moved, SNAPSHOT)).toEqual([
      expect.stringMatching(
        /no AWS::DynamoDB::Table 'RegistryTableDB777839' \(tables: RegistryTable2ABCDEF0\)/,
      ),
    ]);

    const named = structuredClone(table);
    named.Properties = { ...named.Properties, TableName: 'registry' };
    expect(replacementRisks({ Resources: { [SNAPSHOT.logicalId]: named } }, SNAPSHOT)).toEqual([
      'TableName is "registry", was null',
    ]);

    const rekeyed = structuredClone(table);
    rekeyed.Properties = {
      ...rekeyed.Properties,
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
    };
    expect(replacementRisks({ Resources: { [SNAPSHOT.logicalId]: rekeyed } }, SNAPSHOT)).toEqual([
      expect.stringMatching(/^KeySchema is /),
    ]);
  });

  it('the example stack policy denies replacing or deleting exactly this table', () => {
    const policy = JSON.parse(
      readFileSync(new URL('../../examples/stack-policy.json', import.meta.url), 'utf8'),
    ) as { Statement: { Effect: string; Action: string[]; Resource: string }[] };
    const deny = policy.Statement.filter((s) => s.Effect === 'Deny');
    expect(deny.flatMap((s) => s.Action).sort()).toEqual(['Update:Delete', 'Update:Replace']);
    // Stack policies match logical IDs with `*` wildcards.
    for (const statement of deny) {
      const pattern = statement.Resource.replace(/^LogicalResourceId\//, '');
      const matches = new RegExp(`^${pattern.replaceAll('*', '.*')}$`);
      const matched = Object.keys(tokenTemplate().Resources).filter((id) => matches.test(id));
      expect(matched).toEqual([SNAPSHOT.logicalId]);
    }
    expect(policy.Statement).toContainEqual({
      Effect: 'Allow',
      Action: 'Update:*',
      Principal: '*',
      Resource: '*',
    });
  });
});
