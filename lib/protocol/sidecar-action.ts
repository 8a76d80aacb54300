import { RegistrarError } from '../domain/errors.ts';

/**
 * `{"action":"sidecar"}` (additive to protocol v1): the asking connection's entry's sidecar
 * bootstrap and a fresh mesh identity. The request carries nothing else, on purpose: the
 * service account, namespace and audience all come from the entry the connection holds and
 * the registrar's mesh settings, never from the agent (a field it could set would be a field
 * an attacker could set). Extra fields are refused, not ignored.
 *
 * Apart from sidecar-message.ts (the bootstrap and token shapes, and their checks where the
 * agent reads them) so that the message function, which only routes this action, carries
 * none of them (issue 27).
 */
export const SIDECAR_ACTION = 'sidecar';

export interface SidecarMessage {
  action: typeof SIDECAR_ACTION;
}

/** What is wrong with a `sidecar` message (its action already read), or nothing. */
export function sidecarMessageProblem(message: object): string | undefined {
  const extra = Object.keys(message).find((key) => key !== 'action');
  return extra === undefined
    ? undefined
    : `unexpected field '${extra}'; send {"action":"sidecar"}: the service account, namespace and audience are the entry's own`;
}

/** Error codes of `sidecar` refusals (besides NotRegistered, Forbidden and InvalidMessage). */
export const SIDECAR_ERROR_CODES = {
  /** The registrar has no cluster to mint in (no projection configured): not an error of the VM. */
  unavailable: 'SidecarUnavailable',
  /** The entry names no service account: no identity is minted for `default` by accident. */
  noServiceAccount: 'NoServiceAccount',
} as const;

/** 503-like: the registrar is not set up for sidecar bootstraps; registration is unaffected. */
export class SidecarUnavailableError extends RegistrarError {
  constructor(message: string) {
    super(message, 503, SIDECAR_ERROR_CODES.unavailable);
  }
}

/** 400-like: the entry's group names no service account, so there is no identity to mint. */
export class NoServiceAccountError extends RegistrarError {
  constructor(message: string) {
    super(message, 400, SIDECAR_ERROR_CODES.noServiceAccount);
  }
}
