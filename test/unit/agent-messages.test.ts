import { describe, expect, it } from 'vitest';
import {
  InvalidMessageError,
  MAX_MESSAGE_BYTES,
  parseAgentMessage,
} from '../../lib/protocol/agent-messages.ts';

function refusal(body: string | undefined): InvalidMessageError {
  try {
    parseAgentMessage(body);
  } catch (error) {
    if (error instanceof InvalidMessageError) return error;
    throw error;
  }
  throw new Error('expected the message to be refused');
}

describe('parseAgentMessage', () => {
  it('reads a healthy report', () => {
    expect(parseAgentMessage('{"action":"health","healthy":true}')).toEqual({
      action: 'health',
      healthy: true,
    });
  });

  it('reads an unhealthy report with its message and ignores unknown fields', () => {
    expect(
      parseAgentMessage('{"action":"health","healthy":false,"message":"503 from /ready","v":2}'),
    ).toEqual({ action: 'health', healthy: false, message: '503 from /ready' });
  });

  it('reads describe and ping', () => {
    expect(parseAgentMessage('{"action":"describe"}')).toEqual({ action: 'describe' });
    expect(parseAgentMessage('{"action":"ping"}')).toEqual({ action: 'ping' });
  });

  it('reads a drain, and refuses one with a field it would ignore, naming the field', () => {
    expect(parseAgentMessage('{"action":"drain"}')).toEqual({ action: 'drain' });
    const error = refusal('{"action":"drain","now":true}');
    expect(error.code).toBe('InvalidMessage');
    expect(error.message).toBe(
      `invalid drain message: unexpected field 'now'; send {"action":"drain"}`,
    );
  });

  it('decodes a base64-encoded body', () => {
    const body = Buffer.from('{"action":"describe"}').toString('base64');
    expect(parseAgentMessage(body, true)).toEqual({ action: 'describe' });
  });

  it('refuses non-JSON with InvalidJson', () => {
    const error = refusal('healthy please');
    expect(error.code).toBe('InvalidJson');
    expect(error.statusCode).toBe(400);
  });

  it('refuses an empty body as non-JSON', () => {
    expect(refusal(undefined).code).toBe('InvalidJson');
  });

  it('refuses an unknown action with UnknownAction and names it', () => {
    const error = refusal('{"action":"reboot"}');
    expect(error.code).toBe('UnknownAction');
    expect(error.message).toContain("'reboot'");
  });

  it('refuses JSON without an action, and an action inherited from Object.prototype', () => {
    expect(refusal('{"healthy":true}').code).toBe('UnknownAction');
    expect(refusal('[1,2]').code).toBe('UnknownAction');
    expect(refusal('{"action":"toString"}').code).toBe('UnknownAction');
  });

  it('refuses a health report without a boolean healthy', () => {
    expect(refusal('{"action":"health"}').code).toBe('InvalidMessage');
    const error = refusal('{"action":"health","healthy":"true"}');
    expect(error.code).toBe('InvalidMessage');
    expect(error.message).toContain("'healthy' must be true or false");
  });

  it('refuses a message over 32 KB with MessageTooLarge, before parsing it', () => {
    const padding = 'x'.repeat(MAX_MESSAGE_BYTES);
    const error = refusal(`{"action":"health","healthy":true,"message":"${padding}"}`);
    expect(error.code).toBe('MessageTooLarge');
  });

  it('counts bytes, not characters, against the limit', () => {
    // 11,000 three-byte characters: under 32,768 characters, over 32,768 bytes.
    const error = refusal(`"${'€'.repeat(11_000)}"`);
    expect(error.code).toBe('MessageTooLarge');
  });

  it('accepts a message of exactly 32 KB', () => {
    const base = '{"action":"describe","pad":""}';
    const body = base.replace('""', `"${'x'.repeat(MAX_MESSAGE_BYTES - base.length)}"`);
    expect(Buffer.byteLength(body)).toBe(MAX_MESSAGE_BYTES);
    expect(parseAgentMessage(body)).toEqual({ action: 'describe' });
  });
});
