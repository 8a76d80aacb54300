import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What the agent's .deb and .rpm say about themselves, in one place. The user and the service
 * are the names the unit (packaging/registrar-agent.service) and docs/agent.md use.
 */
export const AGENT_PACKAGE = {
  name: 'registrar-agent',
  user: 'registrar-agent',
  service: 'registrar-agent.service',
  summary: 'workload-registrar agent: registers this VM as a mesh WorkloadEntry',
  description: [
    'Keeps one WebSocket open to the workload-registrar (API Gateway), which registers this',
    'EC2 instance as an Istio WorkloadEntry of its WorkloadGroup; runs the group health probe',
    'and reports the result; drains on stop. Runs as a systemd service under its own user.',
  ],
  maintainer: 'workload-registrar maintainers <maintainers@workload-registrar.invalid>',
  license: 'Apache-2.0',
  /**
   * The runtime the bundle needs (Node.js 22 or newer: esbuild's target and the bundle's own
   * check). Debian and Ubuntu name it `nodejs` (NodeSource's repository and Debian from 14
   * ship 22; Debian 12/13 and Ubuntu 24.04 ship 18/20, which the dependency refuses). Amazon
   * Linux 2023 installs each major side by side as `nodejs20`, `nodejs22`, ..., with
   * /usr/bin/node an alternatives link to whichever is active, so the RPM needs `nodejs22` and
   * starts /usr/bin/node-22 (docs/agent.md, "Install on an EC2 instance").
   */
  debDepends: 'nodejs (>= 22)',
  rpmRequires: 'nodejs22',
  rpmNode: '/usr/bin/node-22',
  /**
   * Istio's VM package (its .deb and .rpm are both named so): its postinst gives the sidecar's
   * directories back to istio-proxy at every configure, so the agent's packages trigger on it
   * (packaging/deb/triggers, packaging/rpm/triggerin.sh).
   */
  istioPackage: 'istio-sidecar',
} as const;

/** package.json's version, e.g. `0.2.0` or `0.2.0-dev`. */
export function projectVersion(root: string): string {
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    version?: unknown;
  };
  if (typeof version !== 'string' || !/^\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?$/.test(version)) {
    throw new Error(`package.json: version '${String(version)}' is not X.Y.Z or X.Y.Z-<tag>`);
  }
  return version;
}

/**
 * The version as both package managers spell it: `0.2.0-dev` becomes `0.2.0~dev`, which dpkg
 * and rpm both sort before `0.2.0` (a `-` would be Debian's revision, and rpm refuses it).
 */
export function packageVersion(version: string): string {
  return version.replace('-', '~');
}
