import { type Cluster, ClusterError, type WriteResult } from './cluster.ts';
import type { Action } from './diff.ts';
import { isManaged, type ManagedKind } from './kinds.ts';
import { type KubeObject, sameList } from './objects.ts';
import type { ChangeAction, ProjectionReport, Target } from './report.ts';

export interface ApplyContext {
  cluster: Cluster;
  report: ProjectionReport;
  target: Target;
  dryRun: boolean;
  concurrency: number;
  /** `kind/namespace/name` of objects found to exist without our label: never written. */
  unmanaged: Set<string>;
}

/**
 * Runs the writes, `concurrency` at a time. Returns 'conflict' when any write lost a race (409,
 * or the object vanished): the caller re-reads and plans again, never overwrites. A write
 * refused for another reason (422, 5xx) is reported and does not stop the others.
 */
export async function applyActions(
  actions: readonly Action[],
  ctx: ApplyContext,
): Promise<'done' | 'conflict'> {
  let conflicted = false;
  let next = 0;
  const worker = async () => {
    while (next < actions.length) {
      const action = actions[next++] as Action;
      try {
        if ((await applyAction(action, ctx)) === 'conflict') {
          conflicted = true;
          ctx.report.conflicts += 1;
        }
      } catch (error) {
        const { namespace, name } = action.object.metadata;
        ctx.report.errors.push({
          target: ctx.target,
          kind: action.kind,
          namespace,
          name,
          message: messageOf(error),
        });
      }
    }
  };
  await Promise.all(
    Array.from({ length: Math.max(1, Math.min(ctx.concurrency, actions.length)) }, worker),
  );
  return conflicted ? 'conflict' : 'done';
}

async function applyAction(action: Action, ctx: ApplyContext): Promise<'done' | 'conflict'> {
  const { cluster } = ctx;
  const record = (what: ChangeAction) => {
    const { namespace, name } = action.object.metadata;
    ctx.report.changes.push({ kind: action.kind, action: what, namespace, name });
  };
  if (ctx.dryRun) {
    record(DRY_RUN_ACTIONS[action.type]);
    return 'done';
  }
  switch (action.type) {
    case 'create': {
      const result = await cluster.create(action.kind, action.object);
      if (result.outcome !== 'written')
        return classifyCreateConflict(action.kind, action.object, ctx);
      record('created');
      // A status subresource ignores status on create: it is written in a second request.
      return writeStatusIfDropped(action.kind, result.object, action.object.status, ctx);
    }
    case 'replace': {
      if (action.leavesTraffic && action.status !== undefined) {
        return replaceStatusFirst(action.kind, action.object, action.status, ctx, record);
      }
      const result = await cluster.replace(action.kind, action.object);
      if (result.outcome !== 'written') return 'conflict';
      record('updated');
      if (action.status !== undefined) {
        const status = await cluster.replaceStatus(action.kind, {
          ...result.object,
          status: action.status,
        });
        return status.outcome === 'written' ? 'done' : 'conflict';
      }
      return writeStatusIfDropped(action.kind, result.object, action.object.status, ctx);
    }
    case 'replaceStatus': {
      if (action.leavesTraffic) {
        const result = await leaveTraffic(action.kind, action.object, ctx);
        if (result.outcome !== 'written') return result.outcome;
        record('status-updated');
        return 'done';
      }
      const result = await cluster.replaceStatus(action.kind, action.object);
      if (result.outcome !== 'written') return 'conflict';
      record('status-updated');
      return 'done';
    }
    case 'delete': {
      const outcome = await cluster.delete(action.kind, action.object);
      if (outcome === 'conflict') return 'conflict';
      // 'gone': someone else deleted it first, which is what we wanted.
      if (outcome === 'deleted') record('deleted');
      return 'done';
    }
  }
}

/**
 * Object and status both change and the status takes the object out of traffic (a crash:
 * new annotations, `Healthy` True -> False): the status first, then the object at the
 * version that write returned, so the first write to land is the one istiod acts on.
 */
async function replaceStatusFirst(
  kind: ManagedKind,
  object: KubeObject,
  status: KubeObject['status'],
  ctx: ApplyContext,
  record: (what: ChangeAction) => void,
): Promise<'done' | 'conflict'> {
  const written = await leaveTraffic(kind, { ...object, status }, ctx);
  if (written.outcome !== 'written') return written.outcome;
  const result = await ctx.cluster.replace(kind, {
    ...object,
    metadata: { ...object.metadata, resourceVersion: written.object.metadata.resourceVersion },
    status: written.object.status,
  });
  if (result.outcome !== 'written') return 'conflict';
  record('updated');
  return 'done';
}

/**
 * Writes a status that takes the object out of traffic (a `Healthy` condition that was True:
 * the VM crashed, drained, failed its probe, was cordoned). istiod keeps routing to the entry
 * until this very write lands: with a status subresource no object write can take a stored
 * `Healthy: True` back, and the annotation `health-checks-enabled` asks for exactly that
 * condition. So when the API server refuses this write (5xx, 429, a webhook, RBAC missing on
 * `.../status`), the object is deleted instead, preconditioned on what was read: the mesh
 * stops routing to it either way, and the next reconcile creates it again (a new uid in the
 * cluster, the registry's entry untouched), out of traffic until its status lands. The write's
 * error is still reported. A lost race (409, gone) is only a conflict: re-read and plan again.
 */
async function leaveTraffic(
  kind: ManagedKind,
  object: KubeObject,
  ctx: ApplyContext,
): Promise<{ outcome: 'written'; object: KubeObject } | { outcome: 'done' | 'conflict' }> {
  let refused: unknown;
  try {
    const result = await ctx.cluster.replaceStatus(kind, object);
    if (result.outcome === 'written') return result;
    return { outcome: 'conflict' };
  } catch (error) {
    refused = error;
  }
  let deleted: Awaited<ReturnType<ApplyContext['cluster']['delete']>>;
  try {
    deleted = await ctx.cluster.delete(kind, object);
  } catch (error) {
    throw new Error(
      `${messageOf(refused)}; deleting the object instead (to take it out of traffic) failed too: ${messageOf(error)}`,
    );
  }
  if (deleted === 'conflict') return { outcome: 'conflict' };
  const { namespace, name } = object.metadata;
  if (deleted === 'deleted') ctx.report.changes.push({ kind, action: 'deleted', namespace, name });
  ctx.report.errors.push({
    target: ctx.target,
    kind,
    namespace,
    name,
    message: `${messageOf(refused)}; the status that takes it out of traffic could not be written, so the object was deleted (the next reconcile creates it again)`,
  });
  return { outcome: 'done' };
}

const DRY_RUN_ACTIONS: Record<Action['type'], ChangeAction> = {
  create: 'created',
  replace: 'updated',
  replaceStatus: 'status-updated',
  delete: 'deleted',
};

/**
 * 409 on create: either another projector created it first (re-read, it will match) or an
 * object with that name exists that is not ours: left alone and reported, never adopted.
 */
async function classifyCreateConflict(
  kind: ManagedKind,
  object: KubeObject,
  ctx: ApplyContext,
): Promise<'done' | 'conflict'> {
  const existing = await ctx.cluster.get(kind, object.metadata);
  if (existing === undefined || isManaged(existing)) return 'conflict';
  const { namespace, name } = object.metadata;
  ctx.unmanaged.add(unmanagedKey(kind, namespace, name));
  // A slice name is ours to choose: taking another one resolves it; no need to report.
  if (kind === 'EndpointSlice') return 'conflict';
  ctx.report.unmanaged.push({ kind, namespace, name });
  return 'done';
}

/**
 * For kinds whose CRD declares no status subresource (Linkerd's ExternalWorkload) the status
 * travels with the object. Should a later CRD version add the subresource, the server drops
 * it from the object write; writing it through .../status then keeps the condition right.
 */
async function writeStatusIfDropped(
  kind: ManagedKind,
  written: KubeObject,
  wanted: KubeObject['status'],
  ctx: ApplyContext,
): Promise<'done' | 'conflict'> {
  if (!wanted?.conditions || sameList(written.status?.conditions, wanted.conditions)) return 'done';
  const result: WriteResult = await ctx.cluster.replaceStatus(kind, {
    ...written,
    status: { ...(written.status ?? {}), ...wanted },
  });
  return result.outcome === 'written' ? 'done' : 'conflict';
}

export function unmanagedKey(kind: ManagedKind, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

export function messageOf(error: unknown): string {
  if (error instanceof ClusterError) return error.message;
  return error instanceof Error ? error.message : String(error);
}
