import { UnauthenticatedError } from '../domain/errors.ts';
import type { Headers, MultiValueHeaders } from './websocket-events.ts';

/**
 * The join token from `Authorization: Bearer <token>`. Header names are case-insensitive
 * (HTTP/2 clients send them lower case), and so is the scheme (RFC 7235). Refusals never
 * repeat the header's value.
 */
export function bearerToken(
  headers: Headers | null | undefined,
  multiValueHeaders?: MultiValueHeaders | null,
): string {
  const value = headerValue(headers, multiValueHeaders, 'authorization');
  if (value === undefined) throw new UnauthenticatedError();
  const match = /^bearer\s+(\S+)\s*$/i.exec(value);
  if (!match?.[1]) {
    throw new UnauthenticatedError(
      'authorization header is not a bearer token; send Authorization: Bearer <join token>',
    );
  }
  return match[1];
}

function headerValue(
  headers: Headers | null | undefined,
  multiValueHeaders: MultiValueHeaders | null | undefined,
  lowerCaseName: string,
): string | undefined {
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (name.toLowerCase() === lowerCaseName && value) return value;
  }
  for (const [name, values] of Object.entries(multiValueHeaders ?? {})) {
    if (name.toLowerCase() === lowerCaseName && values?.[0]) return values[0];
  }
  return undefined;
}
