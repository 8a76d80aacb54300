/**
 * `npm run bench [-- SECTION...]`: measures what the design budgets and prints the numbers.
 * Nothing here asserts a time; results are recorded by hand in docs/benchmarks.md with the
 * machine and the date.
 */
import { cpus, totalmem } from 'node:os';

// The functions run in this process for some sections: keep their logs and EMF metrics out of
// the numbers. Set before the sections import them, since Powertools reads these at load.
process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

type Section = { title: string; run: () => Promise<void> };

const sections: Record<string, Section> = {
  requests: {
    title:
      'DynamoDB requests per event (local gateway -> handlers -> dynalite, counted on the wire)',
    run: async () => {
      const { measureRequestCounts } = await import('./request-counts.ts');
      const rows = await measureRequestCounts();
      table(
        ['event', 'reads', 'writes', 'requests'],
        rows.map((r) => [r.event, r.reads, r.writes, formatCounts(r.requests)]),
      );
      // What the events add to the entry's item: every later write of it is billed by its size.
      const { measureEventBytes } = await import('./event-bytes.ts');
      table(
        ['item', 'bytes', 'WRU per write'],
        (await measureEventBytes()).map((r) => [r.what, r.bytes, r.writeUnits]),
      );
    },
  },
  sidecar: {
    title:
      'One sidecar ask (mesh identity refresh): DynamoDB and Kubernetes requests, reply size, round trip (kube-apiserver stand-in)',
    run: async () => {
      const { measureSidecarCost } = await import('./sidecar-requests.ts');
      const x = await measureSidecarCost();
      table(
        ['asks', 'DynamoDB / ask', 'Kubernetes / ask', 'reply bytes', 'median ms', 'p95 ms'],
        [
          [
            x.asks,
            formatCounts(x.dynamoPerAsk),
            formatCounts(x.kubernetesPerAsk),
            x.replyBytes,
            x.medianMs,
            x.p95Ms,
          ],
        ],
      );
    },
  },
  sweep: {
    title: 'Sweep cost: 10,000 entries, 100 due',
    run: async () => {
      const { measureSweepCost } = await import('./sweep-cost.ts');
      const r = await measureSweepCost(Number(process.env.BENCH_SWEEP_ENTRIES ?? 10_000), 100);
      table(
        ['entries', 'due', 'deleted', 'items read', 'items read / deleted', 'requests', 'sweep ms'],
        [
          [
            r.entries,
            r.due,
            r.deleted,
            r.itemsRead,
            r.itemsReadPerDeleted.toFixed(2),
            formatCounts(r.requests),
            r.sweepMs.toFixed(0),
          ],
        ],
      );
    },
  },
  'heartbeat-pace': {
    title:
      "Heartbeat checks a run makes per namespace, with and without another tenant's short heartbeat: the deployed sweeper handler, one scheduled run each (BENCH_PACE_SHOP_VMS, default 1,000 VMs of 60s x 3 in shop; BENCH_PACE_EVIL_VMS, default 1 VM of 5s x 2 in evil)",
    run: async () => {
      const { measureTenantPace } = await import('./heartbeat-pace.ts');
      const rows = await measureTenantPace(
        Number(process.env.BENCH_PACE_SHOP_VMS ?? 1_000),
        Number(process.env.BENCH_PACE_EVIL_VMS ?? 1),
      );
      table(
        ['scenario', 'shop checks', 'evil checks', 'run wall s'],
        rows.map((r) => [r.scenario, r.shopChecks, r.evilChecks, (r.runWallMs / 1000).toFixed(1)]),
      );
    },
  },
  'heartbeat-change': {
    title:
      'A heartbeat change, from apply to in force on every live VM: the deployed sweeper handler tells them (POST to a management API stand-in), each acknowledges through the message use case (BENCH_CHANGE_VMS, default 10,000; 10s x 3 -> 5s x 2)',
    run: async () => {
      const { measureHeartbeatChange } = await import('./heartbeat-change.ts');
      const r = await measureHeartbeatChange(Number(process.env.BENCH_CHANGE_VMS ?? 10_000));
      table(
        [
          'VMs',
          'change',
          'first notice s',
          'last notice s',
          'in force s',
          'notices',
          'acknowledged',
        ],
        [
          [
            r.vms,
            r.change,
            (r.firstNoticeMs / 1000).toFixed(1),
            (r.lastNoticeMs / 1000).toFixed(1),
            (r.inForceMs / 1000).toFixed(1),
            r.notices,
            r.acknowledged,
          ],
        ],
      );
    },
  },
  'silence-lanes': {
    title:
      'Silence with heartbeat lanes: the deployed sweeper handler, each lane run alone (BENCH_SILENCE_VMS, default 10,000; BENCH_SILENCE_SETTINGS, default "10x3:1 10x3:3": <interval s>x<misses>:<lanes>)',
    run: async () => {
      const { measureSilenceLanes } = await import('./silence-lanes.ts');
      const settings = (process.env.BENCH_SILENCE_SETTINGS ?? '10x3:1 10x3:3')
        .split(' ')
        .map((spec) => {
          const [beat = '10x3', lanes = '1'] = spec.split(':');
          const [interval = 10, misses = 3] = beat.split('x').map(Number);
          return { heartbeat: { intervalMs: interval * 1000, misses }, lanes: Number(lanes) };
        });
      const results = await measureSilenceLanes(
        Number(process.env.BENCH_SILENCE_VMS ?? 10_000),
        settings,
      );
      table(
        [
          'setting',
          'lanes',
          'lane',
          'checks',
          'full passes',
          'first pass s',
          'CPU / check ms',
          'silent closed',
          'last closed s',
          'load',
        ],
        results.flatMap((r) =>
          r.perLane.map((lane) => [
            r.heartbeat,
            r.lanes,
            lane.lane,
            lane.checks,
            lane.fullPasses,
            (lane.firstPassMs / 1000).toFixed(1),
            lane.cpuPerCheckMs.toFixed(2),
            lane.closed,
            (lane.lastCloseMs / 1000).toFixed(1),
            lane.load,
          ]),
        ),
      );
    },
  },
  liveness: {
    title: 'Liveness checks: GET @connections calls per connected VM per hour (1,000 VMs, 5 min)',
    run: async () => {
      const { measureLivenessCalls } = await import('./liveness-calls.ts');
      const r = await measureLivenessCalls(Number(process.env.BENCH_LIVENESS_VMS ?? 1_000));
      table(
        ['VMs', 'interval', 'sweeps', 'calls', 'calls / VM / hour', 'budget', 'DynamoDB requests'],
        [
          [
            r.vms,
            `${r.livenessIntervalMin} min`,
            r.sweeps,
            r.managementCalls,
            r.perVmPerHour.toFixed(2),
            r.budgetPerVmPerHour,
            formatCounts(r.requests),
          ],
        ],
      );
    },
  },
  disruption: {
    title: 'Fail static: deletion rate and the reads of the decision, normal / slowed / held',
    run: async () => {
      const { measureDisruptionCost } = await import('./disruption-cost.ts');
      const rows = await measureDisruptionCost(Number(process.env.BENCH_DISRUPTION_ENTRIES ?? 600));
      table(
        [
          'mode',
          'away',
          'run 1 deleted',
          'run 1 pace /s',
          'deletions/s (10 runs)',
          'decision items read',
          'run items read',
        ],
        rows.map((r) => [
          r.mode,
          r.away,
          r.firstRunDeleted,
          r.firstRunPace.toFixed(1),
          r.deletesPerSecond.toFixed(2),
          r.decisionItemsRead,
          r.runItemsRead,
        ]),
      );
    },
  },
  rollout: {
    title: 'Template rollout: a label change reaching 20,000 live entries (default pace 25%/10s)',
    run: async () => {
      const { measureRolloutCost } = await import('./rollout.ts');
      const r = await measureRolloutCost(Number(process.env.BENCH_ROLLOUT_ENTRIES ?? 20_000));
      table(
        [
          'entries',
          'pace',
          'writes/s',
          'updated',
          'conflicts',
          'rollout s',
          'runs',
          'requests',
          'UpdateItem / entry',
          'other requests / entry',
          'items read / entry',
          'entry bytes',
        ],
        [
          [
            r.entries,
            r.pace,
            r.writesPerSecond,
            r.updated,
            r.conflicts,
            r.rolloutSeconds.toFixed(1),
            r.runs,
            formatCounts(r.requests),
            r.writesPerEntry.toFixed(3),
            r.otherRequestsPerEntry.toFixed(3),
            r.itemsReadPerEntry.toFixed(2),
            r.entryBytes,
          ],
        ],
      );
    },
  },
  load: {
    title: 'Local end-to-end: agents connecting at once through the local gateway',
    run: async () => {
      const { measureLocalLoad } = await import('./local-load.ts');
      // BENCH_LOAD_RUNTIME=memory-quiet: the pre-2026-11-27 setup (--memory, LOG_LEVEL=ERROR).
      const r = await measureLocalLoad({
        agents: Number(process.env.BENCH_AGENTS ?? 1000),
        ...(process.env.BENCH_AGENTS_AT_ONCE
          ? { atOnce: Number(process.env.BENCH_AGENTS_AT_ONCE) }
          : {}),
        ...(process.env.BENCH_LOAD_RUNTIME === 'memory-quiet'
          ? { runtime: 'memory-quiet' as const }
          : {}),
      });
      table(
        [
          'runtime',
          'at once',
          'agents',
          'registered',
          'refused',
          'wall s',
          'registrations/s',
          'connect p50 ms',
          'connect p99 ms',
          'RSS idle MB',
          'RSS with connections MB',
          'CPU ms/registration: all, main thread, busiest other thread',
          'cores used',
          'client CPU ms/registration',
        ],
        [
          [
            r.runtime,
            r.atOnce,
            r.agents,
            r.registered,
            r.refused,
            (r.wallMs / 1000).toFixed(2),
            r.registrationsPerSecond.toFixed(0),
            r.connectP50Ms.toFixed(0),
            r.connectP99Ms.toFixed(0),
            r.rssIdleMb.toFixed(0),
            r.rssWithConnectionsMb.toFixed(0),
            [
              r.cpuMsPerRegistration,
              r.mainThreadCpuMsPerRegistration,
              r.busiestOtherThreadCpuMsPerRegistration,
            ]
              .map((ms) => ms.toFixed(1))
              .join(', '),
            r.coresUsed.toFixed(2),
            r.clientCpuMsPerRegistration.toFixed(1),
          ],
        ],
      );
    },
  },
  bundles: {
    title:
      'Lambda bundles, paired with a base commit (BENCH_BASE_REF, default HEAD~) built in the same run: size, import in a fresh process, first invocation, warm handler CPU',
    run: async () => {
      const { measureBundlePairs } = await import('./bundle-pairs.ts');
      const pairs = await measureBundlePairs({ runs: Number(process.env.BENCH_BUNDLE_RUNS ?? 5) });
      const { BUNDLE_BUDGETS } = await import('./bundle-budgets.ts');
      const [first] = pairs;
      console.log(`base ${first?.base?.commit ?? '-'}, head ${first?.head.commit}; medians`);
      const cell = (value: number | undefined, digits = 1) =>
        value === undefined || Number.isNaN(value) ? '-' : value.toFixed(digits);
      const both =
        (pick: (s: import('./bundle-pairs.ts').BundleSide) => number, digits = 1) =>
        (p: (typeof pairs)[number]) =>
          `${cell(p.base ? pick(p.base) : undefined, digits)} -> ${cell(pick(p.head), digits)}`;
      table(
        [
          'function',
          'KB (budget)',
          'import ms',
          'init ms (process start to module ready)',
          'import CPU ms',
          'first invocation ms',
          'first invocation CPU ms',
          'cold start CPU ms (import + first)',
          'warm CPU ms/event',
          'ok',
        ],
        pairs.map((p) => [
          p.name,
          `${both((s) => s.bytes / 1024)(p)} (${BUNDLE_BUDGETS[p.name] / 1024})`,
          both((s) => s.importMs)(p),
          both((s) => s.initMs)(p),
          both((s) => s.importCpuMs)(p),
          both((s) => s.firstMs)(p),
          both((s) => s.firstCpuMs)(p),
          both((s) => s.importCpuMs + s.firstCpuMs)(p),
          both((s) => s.warmCpuMs, 2)(p),
          Number.isNaN(p.head.importMs) ? '-' : `${p.base?.ok ?? '-'} / ${p.head.ok}`,
        ]),
      );
      const { measureBundleSizes } = await import('./bundle-size.ts');
      console.log('\nLargest inputs (head)');
      table(
        ['function', 'KB', 'largest inputs'],
        (await measureBundleSizes()).map((r) => [
          r.name,
          (r.bytes / 1024).toFixed(1),
          r.inputs
            .slice(0, 5)
            .map((i) => `${i.source} ${(i.bytes / 1024).toFixed(1)}`)
            .join(', '),
        ]),
      );
    },
  },
  'first-error': {
    title:
      'First-error latency: a rejected invocation reading its stack, with and without --enable-source-maps',
    run: async () => {
      const { measureFirstErrors } = await import('./first-error.ts');
      const errors = await measureFirstErrors();
      table(
        ['function', 'NODE_OPTIONS', 'map KB', 'import ms', 'first error ms', 'second error ms'],
        errors.map((r) => [
          r.name,
          r.variant,
          (r.mapBytes / 1024).toFixed(0),
          r.importMs.toFixed(1),
          r.firstErrorMs.toFixed(1),
          r.secondErrorMs.toFixed(2),
        ]),
      );
    },
  },
  'cold-start': {
    title:
      'Cold start: each bundle imported by a fresh process per sample (import after a warmed loader, and init from process start), SDK external vs bundled, beside an empty module',
    run: async () => {
      const { measureColdStarts } = await import('./cold-start.ts');
      const rows = await measureColdStarts();
      table(
        [
          'function',
          'variant',
          'bundle KB',
          'import ms',
          'init ms (process start to module ready)',
          'init ms of an empty module',
        ],
        rows.map((r) => [
          r.name,
          r.variant,
          (r.bundleBytes / 1024).toFixed(1),
          r.medianImportMs.toFixed(1),
          r.medianInitMs.toFixed(1),
          r.medianEmptyInitMs.toFixed(1),
        ]),
      );
    },
  },
  'handler-memory': {
    title:
      'Lambda heap over warm invocations: each bundle in its own process, heap after a full GC per batch, slope after the warm-up quarter (dynalite, management API stand-in)',
    run: async () => {
      const { HEAP_FUNCTIONS, INTERPRETER_ONLY, measureHandlerHeap } = await import(
        './handler-heap.ts'
      );
      // BENCH_HEAP_INVOCATIONS: one count for every function (default: 12,000 on the request
      // path, 2,400 sweeper and rollout runs). BENCH_HEAP_FUNCTIONS: a comma-separated subset.
      const count = process.env.BENCH_HEAP_INVOCATIONS;
      const chosen = process.env.BENCH_HEAP_FUNCTIONS?.split(',').filter(Boolean);
      const unknown = chosen?.filter(
        (name) => !(HEAP_FUNCTIONS as readonly string[]).includes(name),
      );
      if (unknown?.length) {
        throw new Error(
          `unknown function ${unknown.join(', ')}; choose from ${HEAP_FUNCTIONS.join(', ')}`,
        );
      }
      const kb = (bytes: number) => (bytes / 1024).toFixed(0);
      // BENCH_HEAP_V8_FLAGS=interpreter: the test's setting (no compilers); default as Lambda.
      const v8Flags = process.env.BENCH_HEAP_V8_FLAGS === 'interpreter' ? INTERPRETER_ONLY : [];
      const results = await measureHandlerHeap({
        v8Flags,
        ...(chosen ? { functions: chosen as (typeof HEAP_FUNCTIONS)[number][] } : {}),
        invocations: count
          ? Number(count)
          : {
              authorize: 12_000,
              connect: 12_000,
              disconnect: 12_000,
              message: 12_000,
              sweeper: 2_400,
              ec2StateChange: 12_000,
              rollout: 2_400,
              meshIdentity: 12_000,
            },
        batches: 16,
        onCheckpoint: (name, c) =>
          console.log(
            `${name} after ${c.invocations}: heap ${kb(c.heapUsed)} KB (code ${kb(c.code)} KB), external ${kb(c.external)} KB`,
          ),
      });
      console.log('');
      table(
        [
          'function',
          'invocations',
          'heap after import KB',
          'heap after warm-up KB',
          'heap at end KB',
          'slope KB / 1,000',
          'slope without code KB / 1,000',
          'accepted',
          'ms / invocation',
        ],
        results.map((r) => {
          const warm = r.checkpoints.find((c) => c.invocations === r.warmup);
          const last = r.checkpoints.at(-1);
          return [
            r.name,
            r.invocations,
            kb(r.imported.heapUsed),
            `${kb(warm?.heapUsed ?? 0)} (after ${r.warmup})`,
            kb(last?.heapUsed ?? 0),
            (r.slopePer1000 / 1024).toFixed(1),
            (r.objectSlopePer1000 / 1024).toFixed(1),
            `${r.accepted}${r.firstUnexpected ? ` (first other: ${r.firstUnexpected})` : ''}`,
            (r.invokeMs / r.invocations).toFixed(2),
          ];
        }),
      );
      if (chosen && !chosen.includes('meshIdentity')) return;
      // The message budget's bound (lib/domain/message-budget.ts: 10,000 connections): each
      // sidecar ask from a connection of its own; the slope counts the second half only.
      const churn = Number(process.env.BENCH_HEAP_CHURN_ASKS ?? 30_000);
      console.log(`\nmeshIdentity, each of ${churn} asks from a new connection:`);
      const [bound] = await measureHandlerHeap({
        functions: ['meshIdentity'],
        invocations: churn,
        batches: 15,
        warmupBatches: 8,
        sidecarChurn: true,
        v8Flags,
        onCheckpoint: (_name, c) =>
          console.log(`after ${c.invocations}: heap ${kb(c.heapUsed)} KB`),
      });
      if (bound) {
        console.log(
          `slope after ${bound.warmup}: ${(bound.slopePer1000 / 1024).toFixed(1)} KB / 1,000; accepted ${bound.accepted}`,
        );
      }
    },
  },
  scale: {
    title:
      'Fleet scale: the deployed sweeper handler, the SDK management API client against an HTTP stand-in (25 ms), rotations through $connect/$disconnect, DynamoDB Local (simulated clock); one namespace, then the fair-sweeper case',
    run: async () => {
      const { measureScale } = await import('./scale.ts');
      const sizes = (process.env.BENCH_SCALE_N ?? '10000,100000').split(',').map(Number);
      const backend =
        process.env.BENCH_SCALE_BACKEND === 'dynalite' ? 'dynalite' : 'dynamodb-local';
      for (const vms of sizes) {
        const r = await measureScale(vms, { backend, log: (line) => console.log(`  ${line}`) });
        const cpu = (c: typeof r.cpu) =>
          `${c.medianSeconds} / ${c.maxSeconds} s (main thread max ${c.mainThreadMaxSeconds} s); ${c.maxSecondsAtMemory} s at ${c.memoryMb} MB; ceiling ~${c.ceilingVms} VMs`;
        table(
          [
            'VMs (one namespace)',
            'checked in 1st interval',
            'worst stay: lost $disconnect / closed without frame',
            'longest run',
            'sweeper CPU per run: median / max',
            'queries / items read per run',
            'max WCU/s on one key',
            'hottest: entries / index / counters',
            'counters exact',
          ],
          [
            [
              vms,
              `${r.livenessCoveragePct}%`,
              `${r.worstCrashedStayMinutes} / ${r.worstClosedStayMinutes} min`,
              `${r.longestRunSeconds} s of ${r.sweeperTimeoutSeconds} s`,
              cpu(r.cpu),
              `${r.queriesPerRun} / ${r.itemsReadPerRun}`,
              `${r.maxPartitionWcuPerSecond} (${r.hottestKey})`,
              `${r.hottestByKind.entries} / ${r.hottestByKind.index} / ${r.hottestByKind.counters}`,
              r.countersExact ? 'yes' : 'NO',
            ],
          ],
        );
        const f = r.fair;
        if (f) {
          console.log('');
          table(
            [
              'VMs (fair case)',
              'namespaces',
              "evil's backlog: clean / abnormal (left after 13 runs)",
              "shop's worst stay: lost / closed",
              'checked in 1st interval',
              'longest run',
              'sweeper CPU per run: median / max',
              'queries / items read per run',
              'most namespaces with due work',
            ],
            [
              [
                f.N,
                f.namespaces,
                `${f.evilClean} (${f.evilCleanLeft}) / ${f.evilAbnormal} (${f.evilAbnormalLeft})`,
                `${f.worstLostStayMinutes} / ${f.worstClosedStayMinutes} min`,
                `${f.livenessCoveragePct}%`,
                `${f.longestRunSeconds} s`,
                cpu(f.cpu),
                `${f.queriesPerRun} / ${f.itemsReadPerRun}`,
                f.maxNamespacesWithDue,
              ],
            ],
          );
        }
        console.log(
          `load average (1 min) before / after: ${r.load.map((l) => l.toFixed(2)).join(' / ')}`,
        );
        console.log(JSON.stringify({ scale: r }));
      }
    },
  },
  migrations: {
    title:
      "Migrations on a 100,000-VM table: this release's, and a pass over every entry (DynamoDB Local)",
    run: async () => {
      const { measureMigrationCost } = await import('./migration-cost.ts');
      const vms = Number(process.env.BENCH_MIGRATION_N ?? 100_000);
      const backend =
        process.env.BENCH_SCALE_BACKEND === 'dynalite' ? 'dynalite' : 'dynamodb-local';
      const r = await measureMigrationCost(vms, {
        backend,
        log: (line) => console.log(`  ${line}`),
      });
      table(
        ['migration', 'VMs', 'seconds', 'sweeper runs', 'requests', 'RRU', 'WRU', 'USD'],
        [
          [
            r.release.completed.join(', ') || '(none)',
            r.vms,
            r.release.seconds.toFixed(1),
            1,
            formatCounts(r.release.requests),
            '-',
            '-',
            '-',
          ],
          [
            'every entry, one attribute',
            r.vms,
            r.perEntry.seconds.toFixed(0),
            r.perEntry.slices,
            formatCounts(r.perEntry.requests),
            r.perEntry.rru.toFixed(0),
            r.perEntry.wru.toFixed(0),
            `${r.perEntry.dynamoUsd.toFixed(3)} + Lambda ${r.perEntry.lambdaUsd.toFixed(3)}`,
          ],
        ],
      );
      console.log(JSON.stringify({ migrations: r }));
    },
  },
  storm: {
    title:
      "Reconnect storm: every agent loses its connection at once, API Gateway admits 500 new connections/s (simulated clock, the agent's own backoff)",
    run: async () => {
      const { simulateReconnectStorm } = await import('./reconnect-storm.ts');
      for (const vms of [1_000, 10_000, 100_000]) {
        const r = simulateReconnectStorm({ vms });
        table(
          ['VMs', 'all back (s)', 'bound (s)', 'attempts / VM', 'max attempts/s', 'max admitted/s'],
          [
            [
              vms,
              r.allBackSeconds.toFixed(1),
              r.boundSeconds.toFixed(0),
              (r.attempts / vms).toFixed(2),
              r.maxAttemptsPerSecond,
              r.maxAdmittedPerSecond,
            ],
          ],
        );
        console.log(`back by minute: ${r.backByMinute.join(', ')}`);
        console.log(
          JSON.stringify({
            storm: {
              N: vms,
              allBackSeconds: r.allBackSeconds,
              boundSeconds: r.boundSeconds,
              attemptsPerVm: Number((r.attempts / vms).toFixed(2)),
              maxAdmittedPerSecond: r.maxAdmittedPerSecond,
            },
          }),
        );
      }
    },
  },
  quota: {
    title:
      "Tenant quotas in a reconnect storm: one namespace's connects at 500/s through the quota code (settings and live-count caches, sharded rate counters) over 50 function instances, simulated clock",
    run: async () => {
      const { measureQuotaStorm } = await import('./tenant-quota.ts');
      const vms = Number(process.env.BENCH_QUOTA_N ?? 100_000);
      const backend =
        process.env.BENCH_QUOTA_BACKEND === 'dynalite' ? 'dynalite' : 'dynamodb-local';
      for (const connectRate of [undefined, 50]) {
        const r = await measureQuotaStorm({
          vms,
          backend,
          ...(connectRate === undefined ? {} : { connectRate }),
          log: (line) => console.log(`  ${line}`),
        });
        table(
          [
            'scenario',
            'connects',
            'admitted',
            'refused',
            'reads / connect',
            'writes / connect',
            'max writes/s on one key',
            'hottest key',
          ],
          [
            [
              r.scenario,
              r.connects,
              r.admitted,
              r.refused,
              r.readsPerConnect,
              r.writesPerConnect,
              r.maxWritesPerKeySecond,
              r.hottestKey,
            ],
          ],
        );
        console.log(JSON.stringify({ quota: r }));
      }
    },
  },
  agent: {
    title: 'Agent memory over an hour-equivalent of probes and rotations',
    run: async () => {
      const { measureAgentMemory } = await import('./agent-memory.ts');
      const r = await measureAgentMemory();
      console.log(JSON.stringify(r, null, 2));
    },
  },
  'agent-exe': {
    title:
      "The agent's executable against the bundle on node (and `bun build --compile` with BENCH_BUN): size, start-up, resident memory started, registered and after the reclaim",
    run: async () => {
      const { measureAgentExecutables } = await import('./agent-executable.ts');
      const rows = await measureAgentExecutables();
      table(
        [
          'candidate',
          'size (MB)',
          'xz -1 (MB)',
          '--version warm / cold (ms)',
          'to registered (ms)',
          'RSS started, not connected (MB)',
          'RSS registered, idle (anon + file, MB)',
          'RSS after the reclaim (MB)',
        ],
        rows.map((r) => [
          r.candidate,
          r.sizeMb,
          r.compressedMb ?? '-',
          `${r.versionWarmMs} / ${r.versionColdMs}`,
          r.registeredMs,
          r.rssUnconnectedMb,
          `${r.rssRegisteredMb} (${r.anonRegisteredMb} + ${r.fileRegisteredMb})`,
          r.rssAfterReclaimMb ?? '-',
        ]),
      );
    },
  },
  'agent-floor': {
    title:
      "Agent memory floor: bare node, node:http + ws over ws:// and wss://, yaml (the unit's flags)",
    run: async () => {
      const { agentNodeFlags } = await import('./agent-memory.ts');
      const { measureMemoryFloor } = await import('./agent-memory-floor.ts');
      const rows = await measureMemoryFloor(agentNodeFlags());
      table(
        ['process', 'RSS (MB)', 'anon (MB)', 'file (MB)'],
        rows.map((r) => [r.variant, r.rssMb, r.anonMb, r.fileMb]),
      );
    },
  },
  cli: {
    title: 'CLI start-up: registrar --version, --help, get we -A (local runtime, empty registry)',
    run: async () => {
      const { measureCliStartup } = await import('./cli-startup.ts');
      const rows = await measureCliStartup(Number(process.env.BENCH_CLI_RUNS ?? 9));
      table(
        ['command', 'runs', 'median ms', 'min ms', 'max ms'],
        rows.map((r) => [
          `\`${r.command}\``,
          r.runs,
          r.medianMs.toFixed(0),
          r.minMs.toFixed(0),
          r.maxMs.toFixed(0),
        ]),
      );
    },
  },
  projection: {
    title: 'Kubernetes projection: 10,000 entries against the API stand-in',
    run: async () => {
      const { measureProjection, measureStreamProjection, measureFullReconcileReads } =
        await import('./projection.ts');
      const r = await measureProjection();
      console.log(JSON.stringify(r, null, 2));
      console.log('\nA stream batch of 10 changed entries (istio), by namespace size');
      const rows = [];
      for (const size of [100, 1_000, 10_000]) rows.push(await measureStreamProjection(size));
      table(
        [
          'entries in the namespace',
          'registry reads / changed entry',
          'Kubernetes requests / changed entry',
          'writes',
        ],
        rows.map((x) => [
          x.namespaceSize,
          x.registryReadsPerChangedEntry,
          x.kubernetesRequestsPerChangedEntry,
          x.writes,
        ]),
      );
      console.log(
        '\nThe full reconcile (every 5 min) with nothing changed: registry reads by fleet',
      );
      const fleets = (process.env.BENCH_RECONCILE_FLEETS ?? '100,1000,5000').split(',').map(Number);
      const full = [];
      for (const n of fleets) full.push(await measureFullReconcileReads(n));
      table(
        [
          'entries',
          'namespaces',
          'DynamoDB requests',
          'Scans',
          'items read',
          'read units',
          'bytes / entry',
          'Kubernetes requests',
          'writes',
          'ms',
        ],
        full.map((x) => [
          x.entries,
          x.namespaces,
          formatCounts(x.requests),
          x.scans,
          x.itemsRead,
          x.readUnits,
          x.entryBytes,
          x.kubernetesRequests,
          x.writes,
          x.ms,
        ]),
      );
    },
  },
  routable: {
    title:
      'Crash to unroutable: a VM whose connection dies, until each target sends it nothing (real WebSocket clients, local runtime, kube-apiserver stand-in)',
    run: async () => {
      const { measureRoutableLatency } = await import('./routable-latency.ts');
      const r = await measureRoutableLatency(
        Number(process.env.BENCH_ROUTABLE_VMS ?? 40),
        Number(process.env.BENCH_PROJECTION_INTERVAL_MS ?? 1000),
      );
      console.log(
        `${r.vms} VMs crashed one at a time; the loop reconciles every ${r.intervalMs} ms\n`,
      );
      table(
        ['projector path', 'target', 'p50 ms', 'p99 ms', 'max ms'],
        r.rows.map((x) => [
          x.path,
          x.target,
          x.p50Ms.toFixed(0),
          x.p99Ms.toFixed(0),
          x.maxMs.toFixed(0),
        ]),
      );
    },
  },
  restart: {
    title:
      "Planned restart to routable again: the real agent restarted as systemctl restart does (SIGTERM, drain, clean close, a new process), the projected WorkloadEntry sampled every 2 ms with istiod's rule",
    run: async () => {
      const { measureRestartUnroutable } = await import('./routable-latency.ts');
      const restarts = Number(process.env.BENCH_RESTARTS ?? 5);
      const intervalMs = Number(process.env.BENCH_PROJECTION_INTERVAL_MS ?? 100);
      const rows = await measureRestartUnroutable(restarts, intervalMs);
      console.log(
        `${restarts} restarts per row; the projector's loop runs every ${intervalMs} ms\n`,
      );
      table(
        [
          'group',
          'drain delay',
          'restarts',
          'exit p50 ms',
          'registered p50 ms',
          'unroutable p50 ms',
          'unroutable max ms',
          'routable again p50 ms',
          'routable again max ms',
          'uid kept',
          'max sample gap ms',
        ],
        rows.map((r) => [
          r.group,
          r.drainDelay,
          r.restarts,
          r.exitP50Ms.toFixed(0),
          r.registeredP50Ms.toFixed(0),
          r.unroutableP50Ms.toFixed(0),
          r.unroutableMaxMs.toFixed(0),
          r.routableAgainP50Ms.toFixed(0),
          r.routableAgainMaxMs.toFixed(0),
          r.uidKept ? 'yes' : 'NO',
          r.maxSampleGapMs.toFixed(1),
        ]),
      );
    },
  },
  churn: {
    title:
      'Entry churn over a full 2-hour rotation (make before break through the real $connect/$disconnect handlers, the deployed sweeper every simulated minute)',
    run: async () => {
      const { measureRotationChurn } = await import('./rotation-churn.ts');
      const backend =
        process.env.BENCH_SCALE_BACKEND === 'dynamodb-local' ? 'dynamodb-local' : 'dynalite';
      const r = await measureRotationChurn(Number(process.env.BENCH_CHURN_VMS ?? 10_000), {
        backend,
      });
      table(
        [
          'VMs',
          'simulated minutes',
          'VMs rotated',
          'created',
          'deleted',
          'uid changed',
          'unroutable at sampled minute ends',
          'wall s',
        ],
        [
          [
            r.vms,
            r.minutes,
            r.rotations,
            r.created,
            r.deleted,
            r.uidsChanged,
            r.unroutableMinuteEnds,
            r.wallSeconds,
          ],
        ],
      );
    },
  },
  dashboard: {
    title: 'registrar dashboard: opening a namespace of 20,000 entries (dynalite, over HTTP)',
    run: async () => {
      const { measureDashboardList } = await import('./dashboard-list.ts');
      const r = await measureDashboardList(Number(process.env.BENCH_DASHBOARD_ENTRIES ?? 20_000));
      console.log(
        `${r.entries} entries (copies of 20 written by the connect path) seeded in ${r.seedS.toFixed(0)} s; the cold read of the namespace: ${formatCounts(r.requests)}, ${r.itemsRead} items\n`,
      );
      table(
        ['step', 'ms', 'response bytes', 'rows'],
        r.steps.map((s) => [s.step, s.ms.toFixed(0), s.bytes, s.rows]),
      );
    },
  },
};

function formatCounts(counts: Record<string, number>): string {
  const parts = Object.entries(counts).map(([command, count]) => `${command} ${count}`);
  return parts.length === 0 ? 'none' : parts.join(', ');
}

function table(header: string[], rows: (string | number)[][]): void {
  console.log(`| ${header.join(' | ')} |`);
  console.log(`| ${header.map(() => '---').join(' | ')} |`);
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
}

const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !(name in sections));
if (unknown.length > 0) {
  console.error(
    `unknown section ${unknown.join(', ')}; choose from ${Object.keys(sections).join(', ')}`,
  );
  process.exit(2);
}
console.log(
  `node ${process.version}, ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, ${new Date().toISOString()}`,
);
for (const name of wanted.length > 0 ? wanted : Object.keys(sections)) {
  const section = sections[name];
  if (!section) continue;
  console.log(`\n## ${section.title}\n`);
  const started = performance.now();
  await section.run();
  console.log(`\n(${((performance.now() - started) / 1000).toFixed(1)} s)`);
}
