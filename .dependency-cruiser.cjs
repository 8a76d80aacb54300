/**
 * The layout's one direction, checked by `npm run lint` (so in CI): docs/contributing.md,
 * "Layout". Each deliverable stands on lib/ and on nothing beside it; lib/ stands on nothing
 * above it; no file imports a file that imports it back; inside lib/, a use case defines the
 * ports it calls beside itself, the adapters (lib/store) implement them, importing them as
 * types, and only lib/wiring builds the adapters and hands them in (docs/contributing.md,
 * "Ports and adapters"). test/unit/dependency-rules.test.ts plants each kind of fault and
 * holds this file to failing on it.
 *
 * CommonJS because dependency-cruiser loads its configuration with require().
 */
const DELIVERABLES = '(functions|agent|cli|dashboard|infra/local)';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'a file imports a file that imports it back (type imports too): move what both need into the lower file or a small module of its own',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-sideways',
      severity: 'error',
      comment:
        'a deliverable imports another deliverable: what two of them share moves down into lib/',
      from: { path: `^${DELIVERABLES}/` },
      to: {
        path: `^${DELIVERABLES}/`,
        pathNot: [
          // A deliverable's own files.
          '^$1/',
          // The local runtime is the Lambda host of the local world: it runs the very handlers
          // Lambda runs (docs/design: "local: infra/local --> same functions/"), so it imports
          // functions/ as Lambda loads them, and nothing else beside it.
          '^functions/',
        ],
      },
    },
    {
      name: 'no-sideways-into-functions',
      severity: 'error',
      comment: 'only the local runtime hosts the functions; others use lib/ directly',
      from: { path: `^${DELIVERABLES}/`, pathNot: '^(functions|infra/local)/' },
      to: { path: '^functions/' },
    },
    {
      name: 'use-cases-never-import-adapters',
      severity: 'error',
      comment:
        'lib/store holds the adapters; a use case (lib/registration, rollout, sweep, auth, projection...), lib/protocol and lib/domain are given them through their ports, which live beside the use case that calls them: only lib/wiring (and lib/dependencies.ts, the whole registry for the local runtime) builds adapters. Before this rule the ports lived in lib/store, below the use cases, and 90 imports in 56 files of lib/ reached into it',
      from: { path: '^lib/', pathNot: ['^lib/(store|wiring)/', '^lib/dependencies\\.ts$'] },
      to: { path: '^lib/store/' },
    },
    {
      name: 'adapters-import-ports-as-types',
      severity: 'error',
      comment:
        "an adapter in lib/store implements a port a use case defines: it imports the port (and the records it speaks of) with `import type`, never a use case's code, which would run the use case inside the adapter and make the two depend on each other at run time. Values it needs come from lib/domain, lib/aws or lib/store itself",
      from: { path: '^lib/store/' },
      to: { path: '^lib/', pathNot: '^lib/(store|domain|aws)/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'protocol-below-use-cases',
      severity: 'error',
      comment:
        'lib/protocol converts the wire to the domain; the use cases (registration, rollout, sweep, auth, projection...) stand on it, never the reverse. lib/protocol/identity.ts called lib/auth while lib/auth read principals from it: an arrow each way, until who a caller is moved to lib/auth/verified-identity.ts (issue 45)',
      from: { path: '^lib/protocol/' },
      to: {
        path: '^lib/(registration|rollout|sweep|auth|projection|presentation|gateway|mesh-identity|dashboard-server|wiring)/',
      },
    },
    {
      name: 'domain-stands-alone',
      severity: 'error',
      comment:
        'lib/domain is pure (model, rules, policy, and the plain records the ports speak of): it imports nothing else of lib/, so every other room, the ports and lib/store included, can stand on it',
      from: { path: '^lib/domain/' },
      to: { path: '^lib/', pathNot: '^lib/domain/' },
    },
    {
      name: 'only-entry-points-wire',
      severity: 'error',
      comment:
        'lib/wiring composes adapters for the deliverables (and lib/dependencies.ts for them all); a use case is given its ports, it never builds them',
      from: { path: '^lib/', pathNot: '^lib/(wiring/|dependencies\\.ts$)' },
      to: { path: '^lib/wiring/' },
    },
    {
      name: 'lib-stands-alone',
      severity: 'error',
      comment: 'lib/ is what the deliverables stand on: it imports none of them, nor infra/',
      from: { path: '^lib/' },
      to: { path: '^(functions|agent|cli|dashboard|infra|test|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|cdk\\.out|dashboard/dist|\\.registrar)' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.d.ts'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
