/**
 * One request to the instance metadata service over node:http. Not `fetch`: the first call to
 * `fetch` loads undici, about 11 MB resident that would stay for the agent's whole life, for
 * the few requests the agent makes at start. The built-ins come through getBuiltinModule for
 * the same reason (agent/probes/http-probe.ts).
 */
export interface ImdsResponse {
  status: number;
  body: Buffer;
}

/** The request took longer than its budget; `name` matches what AbortSignal.timeout throws. */
export class ImdsTimeoutError extends Error {
  override name = 'TimeoutError';
}

export function imdsRequest(
  url: URL,
  options: { method?: 'GET' | 'PUT'; headers: Record<string, string>; timeoutMs: number },
): Promise<ImdsResponse> {
  const client =
    url.protocol === 'https:'
      ? process.getBuiltinModule('node:https')
      : process.getBuiltinModule('node:http');
  return new Promise((resolve, reject) => {
    const request = client.request(url, {
      method: options.method ?? 'GET',
      headers: options.headers,
    });
    // The whole exchange, body included, as AbortSignal.timeout bounded the fetch.
    const timer = setTimeout(() => {
      request.destroy(new ImdsTimeoutError(`no answer within ${options.timeoutMs} ms`));
    }, options.timeoutMs);
    const fail = (error: Error) => {
      clearTimeout(timer);
      reject(error);
    };
    request.once('error', fail);
    request.once('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.once('error', fail);
      response.once('end', () => {
        clearTimeout(timer);
        resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks) });
      });
    });
    request.end();
  });
}
