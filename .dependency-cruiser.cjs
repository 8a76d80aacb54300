/**
 * The layout's one direction, checked by `npm run lint` (so in CI): docs/contributing.md,
 * "Layout". Each deliverable stands on lib/ and on nothing beside it; lib/ stands on nothing
 * above it; no file imports a file that imports it back; inside lib/, the adapters (lib/store)
 * stand on lib/domain alone and the use cases stand on them (docs/contributing.md, "Ports and
 * adapters"). test/unit/dependency-rules.test.ts plants each kind of fault and holds this file
 * to failing on it.
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
      name: 'store-below-use-cases',
      severity: 'error',
      comment:
        'lib/store implements ports; it never imports the use cases (lib/registration, rollout, auth, projection...) nor their wiring: a port lives in lib/store beside its adapter (or in lib/domain), and a use case imports it downward. Before issue 45 lib/store imported ports from lib/rollout, lib/auth and lib/registration, which import lib/store: arrows back up that made a folder say nothing of which way an import may point',
      from: { path: '^lib/store/' },
      to: { path: '^lib/', pathNot: '^lib/(store|domain|aws)/' },
    },
    {
      name: 'protocol-below-use-cases',
      severity: 'error',
      comment:
        'lib/protocol converts the wire to the domain; the use cases (registration, rollout, auth, projection...) stand on it, never the reverse. lib/protocol/identity.ts called lib/auth while lib/auth read principals from it: an arrow each way, until who a caller is moved to lib/auth/verified-identity.ts (issue 45)',
      from: { path: '^lib/protocol/' },
      to: {
        path: '^lib/(registration|rollout|auth|projection|presentation|gateway|mesh-identity|dashboard-server|wiring)/',
      },
    },
    {
      name: 'domain-stands-alone',
      severity: 'error',
      comment:
        'lib/domain is pure (model, rules, policy): it imports nothing else of lib/, so every other room, lib/store included, can stand on it',
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
