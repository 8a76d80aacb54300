import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * docs/security.md names, for each defence, the test that plays the attacker, as
 * `dir/file.test.ts` › test name. Each named file must exist and hold a test of that name, so
 * the table cannot point at a test that was renamed or removed.
 */
const page = readFileSync('docs/security.md', 'utf8');

/**
 * Every (file, test name) the page cites: in the table's last cell, `file` › name, further
 * names of the same file as `; › name`, another file as `; `file` › name` (a name may itself
 * hold a semicolon).
 */
function citations(): { file: string; name: string }[] {
  const found: { file: string; name: string }[] = [];
  const citation =
    /(?:`([\w-]+\/[\w.-]+\.test\.ts)`\s*)?›\s*(.+?)(?=;\s*(?:`[^`]+`\s*)?›|\s*\|?\s*$)/g;
  for (const line of page.split('\n').filter((text) => text.startsWith('|'))) {
    const cell = line.split(' | ').at(-1) ?? '';
    let file: string | undefined;
    for (const match of cell.matchAll(citation)) {
      file = match[1] ?? file;
      const name = match[2]?.trim();
      if (file && name) found.push({ file, name });
    }
  }
  return found;
}

describe('docs/security.md', () => {
  const cited = citations();

  it('cites the tests that play the attackers', () => {
    const rows = page.split('\n').filter((line) => line.startsWith('|'));
    expect(cited.length).toBe((rows.join('\n').match(/›/g) ?? []).length);
  });

  it.each(cited.map((c) => [`${c.file} › ${c.name}`, c] as const))(
    '%s exists',
    (_, { file, name }) => {
      const source = readFileSync(`test/${file}`, 'utf8');
      // Test names are written in quotes of any kind; an apostrophe may be escaped or typographic.
      const flexible = name
        .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
        .replace(/['’]/g, "(?:\\\\'|'|’)");
      expect(source).toMatch(new RegExp(flexible));
    },
  );
});
