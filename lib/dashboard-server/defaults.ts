import { isIP } from 'node:net';

/**
 * Where a dashboard listens unless told otherwise: loopback, so only this machine's browser
 * reads it. Apart from the server so that `registrar --help` loads none of it.
 */
export const DASHBOARD_DEFAULTS = {
  address: '127.0.0.1',
  port: 8090,
  refresh: '5s',
} as const;

/** 127.0.0.0/8 and ::1 (also as an IPv4-mapped address): only this machine connects. */
export function isLoopbackAddress(address: string): boolean {
  if (address === '::1') return true;
  const v4 = address.replace(/^::ffff:/i, '');
  return isIP(v4) === 4 && v4.startsWith('127.');
}
