/**
 * The small family of refusals. Each maps to one HTTP status in one place
 * (`lib/protocol/error-response.ts`); anything else is a 500 that reveals nothing.
 * Messages say what was wrong, with the value, and what to do, in lower case.
 */
export class RegistrarError extends Error {
  readonly statusCode: number;
  readonly code: string;

  constructor(message: string, statusCode: number, code: string) {
    super(message);
    this.name = new.target.name;
    this.statusCode = statusCode;
    this.code = code;
  }
}

/** 400: the request or document is malformed. `field` names what was wrong. */
export class InvalidRequestError extends RegistrarError {
  readonly field: string | undefined;

  constructor(message: string, field?: string) {
    super(message, 400, 'InvalidRequest');
    this.field = field;
  }
}

/** 401: the caller did not prove who it is. */
export class UnauthenticatedError extends RegistrarError {
  constructor(
    message = 'missing or invalid credentials; connect with Authorization: Bearer <join token>',
  ) {
    super(message, 401, 'Unauthenticated');
  }
}

/** 403: the caller is known but not allowed to do this. */
export class ForbiddenError extends RegistrarError {
  constructor(message: string) {
    super(message, 403, 'Forbidden');
  }
}

/** 404: the WorkloadGroup (or another named object) does not exist. */
export class NotFoundError extends RegistrarError {
  constructor(message: string) {
    super(message, 404, 'NotFound');
  }
}

/**
 * 409: the request collides with existing state it must not overwrite. The code says which
 * state, because what to do differs and a wrong guess hurts (deleting a live VM's entry cuts
 * it off): `Conflict` an entry made by hand, `NameCollision` another group's or address's entry
 * of the same name, `Departed` a connection whose `$disconnect` was processed first.
 */
export class ConflictError extends RegistrarError {
  constructor(message: string, code: 'Conflict' | 'NameCollision' | 'Departed' = 'Conflict') {
    super(message, 409, code);
  }
}

/**
 * 404 with its own code: the connection holds no WorkloadEntry (it was swept, deleted, or
 * the connection's registration did not land). The agent reconnects when it reads this code.
 */
export class NotRegisteredError extends RegistrarError {
  static readonly CODE = 'NotRegistered';

  constructor(message = 'this connection holds no WorkloadEntry; reconnect to register') {
    super(message, 404, NotRegisteredError.CODE);
  }
}

/**
 * 409 with its own code (counted apart, `Refused` by Reason `AddressInUse`): the address is
 * held, within its network, by another entry's connected VM. An address is unique within a
 * network: two live entries for one IP would route one address to two workloads.
 */
export class AddressInUseError extends RegistrarError {
  static readonly CODE = 'AddressInUse';

  constructor(message: string) {
    super(message, 409, AddressInUseError.CODE);
  }
}

/**
 * 429: a namespace's quota is used up (`Refused` by Reason names which: `MaxEntriesExceeded`,
 * `ConnectRateExceeded`). Nothing was written; the message says how to raise the quota.
 */
export class QuotaExceededError extends RegistrarError {
  static readonly MAX_ENTRIES = 'MaxEntriesExceeded';
  static readonly CONNECT_RATE = 'ConnectRateExceeded';
  /** One connection's messages over its budget (lib/domain/message-budget.ts). */
  static readonly MESSAGE_RATE = 'MessageRateExceeded';

  constructor(message: string, code: string) {
    super(message, 429, code);
  }
}

/**
 * 403 with its own code (`NetworkNotAllowed`, `AddressNotAllowed`): the operator did not allow
 * this namespace (or token, or IAM policy, or group) the network or address the connect names.
 */
export class NotAllowedError extends RegistrarError {
  static readonly NETWORK = 'NetworkNotAllowed';
  static readonly ADDRESS = 'AddressNotAllowed';

  constructor(message: string, code: string) {
    super(message, 403, code);
  }
}

/**
 * 426 Upgrade Required: the agent's version is outside the registrar's skew policy
 * (lib/domain/agent-skew.ts). The message names both versions. The status alone says it
 * where API Gateway forwards no body (a refused `$connect` on AWS): `HTTP 426 Upgrade
 * Required`, which every agent logs.
 */
export class UnsupportedAgentVersionError extends RegistrarError {
  static readonly CODE = 'UnsupportedAgentVersion';

  constructor(message: string) {
    super(message, 426, UnsupportedAgentVersionError.CODE);
  }
}
