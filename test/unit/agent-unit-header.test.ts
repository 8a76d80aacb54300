import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type PackagedPath, parseAgentFiles } from '../../packaging/agent-files.ts';

/**
 * The systemd unit's header is what an operator reads in `systemctl cat registrar-agent`: it
 * must say what the packages did, not a manual install they do not do. 0.2.0's header said
 * "Install as /etc/systemd/system/registrar-agent.service, then: systemctl daemon-reload &&
 * systemctl enable --now registrar-agent", while the packages put it in /usr/lib/systemd/system
 * and enable it without starting it.
 */
const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
const paths = parseAgentFiles(read('packaging/agent-files.txt'));
const unit = read('packaging/registrar-agent.service');
const postinst = read('packaging/deb/postinst');
const rpmPost = read('packaging/rpm/post.sh');

/** The comment lines before the first section. */
function header(text: string): string {
  return text.slice(0, text.indexOf('\n[')).trim();
}

/** What a header says that the packages do not do, one line each. */
function headerProblems(text: string, installed: readonly PackagedPath[]): string[] {
  const head = header(text);
  const problems: string[] = [];
  const unitPath = installed.find((p) => p.target.endsWith('/registrar-agent.service'))?.target;
  if (!unitPath || !head.includes(unitPath)) {
    problems.push(`does not name where the packages install the unit (${unitPath})`);
  }
  for (const [, path] of head.matchAll(/(\/(?:etc|usr|opt)\/\S*[^\s.,;:)])/g)) {
    const known = installed.some((p) => p.target === path || p.target.startsWith(`${path}/`));
    if (!known) problems.push(`names ${path}, which the packages do not install`);
  }
  if (/enable --now|systemctl daemon-reload/.test(head)) {
    problems.push(
      'tells the reader to enable and start it: the packages enable it, and start it only once configured',
    );
  }
  const program = /^ExecStart=(\S+)/m.exec(text)?.[1];
  if (!installed.some((p) => p.target === program)) {
    problems.push(`runs ${program}, which the packages do not install`);
  }
  return problems;
}

describe("the agent unit's header", () => {
  it('says what the packages do: where the unit, the executable and the config go, and that it is enabled, not started', () => {
    expect(headerProblems(unit, paths)).toEqual([]);
    const head = header(unit);
    expect(head).toContain('/usr/lib/systemd/system/registrar-agent.service');
    expect(head).toContain('/etc/registrar-agent/agent.yaml');
    expect(head).toMatch(/enable the unit, and do not start it/);
    // ... which is what the scripts do on a first install: enable, and no start.
    expect(postinst).toMatch(/systemctl .*enable "\$unit"/);
    expect(rpmPost).toContain('systemctl enable registrar-agent.service');
    // (No command line starts it; the message printed names the start for the operator.)
    expect(`${postinst}\n${rpmPost}`).not.toMatch(
      /^\s*(?:if [^\n]*then )?systemctl [^\n]*\b(?:start|--now)\b/m,
    );
  });

  it("refuses 0.2.0's header, which described a manual install into /etc/systemd/system", () => {
    const old = `# systemd unit for the workload-registrar agent (docs/agent.md, "Install on an EC2 instance").
# Install as /etc/systemd/system/registrar-agent.service, then:
#   systemctl daemon-reload && systemctl enable --now registrar-agent
[Unit]
[Service]
ExecStart=/usr/bin/node --max-opt=2 /opt/registrar-agent/registrar-agent.mjs
`;
    expect(headerProblems(old, paths)).toEqual([
      'does not name where the packages install the unit (/usr/lib/systemd/system/registrar-agent.service)',
      'names /etc/systemd/system/registrar-agent.service, which the packages do not install',
      'tells the reader to enable and start it: the packages enable it, and start it only once configured',
      'runs /usr/bin/node, which the packages do not install',
    ]);
  });
});
