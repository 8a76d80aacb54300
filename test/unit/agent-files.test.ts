import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAgentFiles } from '../../packaging/agent-files.ts';
import { packageVersion } from '../../packaging/agent-package.ts';

/**
 * packaging/agent-files.txt is the one list both agent packages are built from: a mistake in it
 * stops the build, naming the line, the field and the value, before anything is packed.
 */
const line = (text: string) => parseAgentFiles(`# header\n\n${text}\n`);

describe('packaging/agent-files.txt', () => {
  it('reads a file, a config file and a dir with their modes and owners', () => {
    expect(
      line(
        'file packaging/x.sh /opt/a/x.sh 0755 root:root\nconfig packaging/a.yaml /etc/a/a.yaml 0640 root:registrar-agent\ndir - /var/lib/a 0750 registrar-agent:registrar-agent',
      ),
    ).toEqual([
      {
        kind: 'file',
        source: 'packaging/x.sh',
        target: '/opt/a/x.sh',
        mode: 0o755,
        user: 'root',
        group: 'root',
      },
      {
        kind: 'config',
        source: 'packaging/a.yaml',
        target: '/etc/a/a.yaml',
        mode: 0o640,
        user: 'root',
        group: 'registrar-agent',
      },
      {
        kind: 'dir',
        source: undefined,
        target: '/var/lib/a',
        mode: 0o750,
        user: 'registrar-agent',
        group: 'registrar-agent',
      },
    ]);
  });

  it('the shipped list installs the executable, the unit and the config file, and no bundle', () => {
    const paths = parseAgentFiles(
      readFileSync(new URL('../../packaging/agent-files.txt', import.meta.url), 'utf8'),
    );
    expect(paths.map((p) => p.target)).toEqual(
      expect.arrayContaining([
        '/opt/registrar-agent/registrar-agent',
        '/usr/lib/systemd/system/registrar-agent.service',
        '/etc/registrar-agent/agent.yaml',
      ]),
    );
    expect(paths.find((p) => p.target === '/opt/registrar-agent/registrar-agent')).toMatchObject({
      source: 'bundle/registrar-agent',
      mode: 0o755,
    });
    expect(paths.filter((p) => p.target.endsWith('.mjs'))).toEqual([]);
    expect(paths.find((p) => p.kind === 'config')?.source).toBe('packaging/agent.example.yaml');
  });

  it.each([
    ['link a b 0644 root:root', "line 3: kind 'link' is not one of file, config, dir"],
    ['file a /opt/x 0644', 'line 3: expected 5 fields (kind source target mode owner), got 4'],
    [
      'file a /opt/../etc/x 0644 root:root',
      "line 3: target '/opt/../etc/x' is not an absolute, normalized path",
    ],
    ['file a opt/x 0644 root:root', "line 3: target 'opt/x' is not an absolute, normalized path"],
    ['file a /opt/x 644 root:root', "line 3: mode '644' is not an octal mode such as 0644"],
    ['file a /opt/x 0664 root:root', "line 3: mode '0664' lets the group or others write /opt/x"],
    ['file a /opt/x 0644 root', "line 3: owner 'root' is not user:group"],
    ['dir a /opt/x 0755 root:root', "line 3: source 'a' must be '-' for a dir"],
    [
      'file - /opt/x 0644 root:root',
      "line 3: source '-' must be a path in the repository or bundle/<name>",
    ],
    [
      'file a /opt/x 0644 root:root\nfile b /opt/x 0644 root:root',
      "line 4: target '/opt/x' is listed twice",
    ],
  ])('refuses %j', (text, message) => {
    expect(() => line(text)).toThrow(`packaging/agent-files.txt ${message}`);
  });
});

describe('package versions', () => {
  it('spells a -dev version with ~, which dpkg and rpm sort before the release', () => {
    expect(packageVersion('0.2.0-dev')).toBe('0.2.0~dev');
    expect(packageVersion('0.2.0')).toBe('0.2.0');
  });
});
