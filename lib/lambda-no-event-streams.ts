/**
 * Put in place of `@smithy/core/event-streams` in the registrar's Lambda bundles (an esbuild
 * alias, infra/constructs/bundling.ts): the SDK's protocols load it only for an operation with
 * an event stream, and neither DynamoDB nor API Gateway's management API has one. ~13 KB of
 * every bundle (issue 27). Reached anyway, it says so instead of failing obscurely.
 */
const MESSAGE =
  "the registrar's Lambda bundles carry no AWS event streams (infra/constructs/bundling.ts, FUNCTION_ALIASES)";

export class EventStreamSerde {
  constructor() {
    throw new Error(MESSAGE);
  }
}

export function eventStreamSerdeProvider(): never {
  throw new Error(MESSAGE);
}
