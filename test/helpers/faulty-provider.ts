/**
 * An OpenAI-compatible endpoint that misbehaves on purpose, over real HTTP, so tests see what the
 * real `openai` client and Steward's retry policy make of it. The requested model name picks the
 * fault: point `openai-api/faulty/<fault>` at it with `FAULTY_BASE_URL` and `FAULTY_API_KEY`
 * (see {@link FaultyProvider.env}). One server serves every fault at once, on OpenAI's
 * `/v1/chat/completions` and Anthropic's `/v1/messages` alike (as `anthropic/<fault>`).
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * - `html`: 200 with an HTML page, as a captive portal or a misrouted proxy answers;
 * - `bad-json`: 200 that claims `application/json` but whose body does not parse;
 * - `error500`: 500 with an OpenAI-shaped error body, every time;
 * - `hang`: reads the request and never answers;
 * - `truncated`: 200 whose `content-length` promises more than is sent before the socket closes.
 */
export const FAULTS = ['html', 'bad-json', 'error500', 'hang', 'truncated'] as const;
export type Fault = (typeof FAULTS)[number];

export interface FaultyProvider {
  /** Base URL of the OpenAI API, ending in `/v1`. */
  url: string;
  /** The environment a worker needs to reach it as `openai-api/faulty/<fault>`. */
  env: { FAULTY_BASE_URL: string; FAULTY_API_KEY: string };
  /** Chat completion requests received for a model name. */
  requests(model: string): number;
  close(): Promise<void>;
}

const ROUTES = ['/v1/chat/completions', '/v1/messages'];

const HTML_PAGE =
  '<html><head><title>Sign in</title></head><body>Sign in to continue</body></html>';

export async function startFaultyProvider(): Promise<FaultyProvider> {
  const counts = new Map<string, number>();
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || !ROUTES.includes(req.url ?? '')) {
        return send(res, 404, { error: { message: `no route ${req.method} ${req.url}` } });
      }
      const model = modelOf(text);
      counts.set(model, (counts.get(model) ?? 0) + 1);
      answer(model, res);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return {
    url,
    env: { FAULTY_BASE_URL: url, FAULTY_API_KEY: 'faulty-key' },
    requests: (model) => counts.get(model) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        // Hanging requests would keep close() waiting for ever.
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The fault a model name asks for: `<fault>`, or `<fault>.<tag>` so each test counts its own calls. */
export function faultOf(model: string): Fault | undefined {
  return FAULTS.find((fault) => model === fault || model.startsWith(`${fault}.`));
}

function modelOf(body: string): string {
  try {
    const parsed = JSON.parse(body) as { model?: unknown };
    return typeof parsed.model === 'string' ? parsed.model : '';
  } catch {
    return '';
  }
}

function answer(model: string, res: ServerResponse): void {
  switch (faultOf(model)) {
    case 'html':
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return void res.end(HTML_PAGE);
    case 'bad-json':
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end('{"id": "chatcmpl-1", "choices": [');
    case 'error500':
      return send(res, 500, {
        error: {
          message: 'The server had an error processing your request.',
          type: 'server_error',
        },
      });
    case 'hang':
      return;
    case 'truncated': {
      const partial = '{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"ind';
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '4096' });
      res.write(partial, () => res.socket?.destroy());
      return;
    }
    case undefined:
      return send(res, 404, {
        error: {
          message: `model ${JSON.stringify(model)} names no fault`,
          type: 'invalid_request_error',
        },
      });
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
