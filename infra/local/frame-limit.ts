/**
 * API Gateway limits WebSocket frames to 32 KB and messages to 128 KB; a larger frame (or
 * message) closes the connection with 1009. `ws` only limits whole messages (`maxPayload`),
 * so this watches the raw bytes the client sends and reports the first frame whose payload is
 * over the limit, as soon as its header arrives (before `ws` can deliver the message).
 *
 * Feed it every chunk read from the socket, in order. Frame header (RFC 6455 section 5.2):
 * byte 0 FIN/opcode, byte 1 MASK bit and a 7-bit length; 126 means a 16-bit length follows,
 * 127 a 64-bit one; then a 4-byte masking key when MASK is set; then the payload.
 */
export function createFrameSizeGuard(
  limitBytes: number,
  onTooLarge: (frameBytes: number) => void,
): (chunk: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  let skip = 0;
  let tripped = false;

  return (chunk: Buffer) => {
    if (tripped) return;
    let data = chunk;
    if (skip > 0) {
      const skipped = Math.min(skip, data.length);
      skip -= skipped;
      data = data.subarray(skipped);
      if (data.length === 0) return;
    }
    pending = pending.length === 0 ? data : Buffer.concat([pending, data]);
    for (;;) {
      const header = readHeader(pending);
      if (header === undefined) return;
      if (header.payloadBytes > limitBytes) {
        tripped = true;
        onTooLarge(header.payloadBytes);
        return;
      }
      const rest = pending.subarray(header.headerBytes);
      if (rest.length < header.payloadBytes) {
        skip = header.payloadBytes - rest.length;
        pending = Buffer.alloc(0);
        return;
      }
      pending = rest.subarray(header.payloadBytes);
    }
  };
}

function readHeader(buffer: Buffer): { headerBytes: number; payloadBytes: number } | undefined {
  if (buffer.length < 2) return undefined;
  const second = buffer.readUInt8(1);
  const masked = (second & 0x80) !== 0;
  const shortLength = second & 0x7f;
  const lengthBytes = shortLength === 126 ? 2 : shortLength === 127 ? 8 : 0;
  const headerBytes = 2 + lengthBytes + (masked ? 4 : 0);
  if (buffer.length < headerBytes) return undefined;
  const payloadBytes =
    lengthBytes === 2
      ? buffer.readUInt16BE(2)
      : lengthBytes === 8
        ? Number(buffer.readBigUInt64BE(2))
        : shortLength;
  return { headerBytes, payloadBytes };
}
