import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentArch } from './agent-runtime.ts';

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
   * What the .deb needs of the system for the executable (packaging/agent-executable.ts:
   * Node.js 22's official binary with the agent inside): glibc 2.28 and libstdc++ of GCC 5 or
   * newer (GLIBCXX_3.4.21, CXXABI_1.3.9), libgcc_s. Every Debian from 10 and Ubuntu from 18.10
   * has them installed (apt itself needs libstdc++), so no repository is added.
   * test/integration/agent-executable.test.ts reads both architectures' executables and holds
   * their symbol versions to these. The .rpm's come from the executable itself, through rpm's
   * own reader (packaging/rpm-package.ts); Amazon Linux 2023 has glibc 2.34 and GCC 11's
   * libstdc++. `passwd` (Debian) and `shadow-utils` (rpm): useradd, for the agent's user.
   */
  debDepends: 'libc6 (>= 2.28), libgcc-s1 | libgcc1, libstdc++6 (>= 5), passwd',
  /**
   * Istio's VM package (its .deb and .rpm are both named so): its postinst gives the sidecar's
   * directories back to istio-proxy at every configure, so the agent's packages trigger on it
   * (packaging/deb/triggers, packaging/rpm/triggerin.sh).
   */
  istioPackage: 'istio-sidecar',
} as const;

/** The architecture as each package manager spells it: in a package's name and its metadata. */
export const PACKAGE_ARCH: Record<AgentArch, { deb: 'amd64' | 'arm64'; rpm: AgentArch }> = {
  x86_64: { deb: 'amd64', rpm: 'x86_64' },
  aarch64: { deb: 'arm64', rpm: 'aarch64' },
};

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
