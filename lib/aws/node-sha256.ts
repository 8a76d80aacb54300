import { createHash, createHmac } from 'node:crypto';

/**
 * The SigV4 signer's hash (`new SignatureV4({ sha256: NodeSha256 })`), from node:crypto, as the
 * SDK's Node build does (@smithy/hash-node): a pure-JS SHA-256 package would be a second,
 * slower copy of what Node ships.
 */
export class NodeSha256 {
  readonly #hash: ReturnType<typeof createHash> | ReturnType<typeof createHmac>;
  constructor(secret?: Bytes) {
    this.#hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
  }
  update(data: Bytes): void {
    this.#hash.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.#hash.digest());
  }
}

type Bytes = string | ArrayBuffer | ArrayBufferView;

function bytes(data: Bytes): string | Uint8Array {
  if (typeof data === 'string') return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}
