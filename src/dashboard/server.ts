/**
 * The dashboard's HTTP server (node:http, 127.0.0.1 only): the page, `data.json` (the numbers
 * and the charts' spec, read afresh at each request), and Vega and Vega-Lite from node_modules.
 */
import { existsSync, promises as fs } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { dashboardSpec } from './charts';
import type { DashboardData } from './model';
import { dashboardPage } from './page';

/** The browser builds of the charting libraries, by the name the page asks for. */
const SCRIPTS: Record<string, [pkg: string, file: string]> = {
  '/vega.min.js': ['vega', 'build/vega.min.js'],
  '/vega-lite.min.js': ['vega-lite', 'build/vega-lite.min.js'],
};

export interface DashboardServer {
  url: string;
  close(): Promise<void>;
}

/** Serves the dashboard of eval set `name` on 127.0.0.1:`port` (0: any free port). */
export async function serveDashboard(
  name: string,
  port: number,
  read: () => Promise<DashboardData>,
): Promise<DashboardServer> {
  const page = dashboardPage(name);
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const send = (status: number, type: string, body: string | Buffer): void => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    if (req.method !== 'GET') return send(405, 'text/plain', 'GET only\n');
    if (url.pathname === '/') return send(200, 'text/html; charset=utf-8', page);
    if (url.pathname === '/data.json') {
      read().then(
        (data) =>
          send(200, 'application/json', JSON.stringify({ data, spec: dashboardSpec(data) })),
        (err: unknown) =>
          send(503, 'application/json', JSON.stringify({ error: (err as Error).message })),
      );
      return;
    }
    const script = SCRIPTS[url.pathname];
    if (script) {
      fs.readFile(packageFile(...script)).then(
        (body) => send(200, 'text/javascript', body),
        (err: unknown) => send(500, 'text/plain', `${(err as Error).message}\n`),
      );
      return;
    }
    send(404, 'text/plain', 'not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A file of an installed package, found where Node would find the package (its `exports` do
 * not list the browser builds, so `require.resolve` cannot name them).
 */
function packageFile(pkg: string, file: string): string {
  for (const dir of require.resolve.paths(pkg) ?? []) {
    const candidate = path.join(dir, pkg, file);
    if (existsSync(candidate)) return candidate;
  }
  throw new Error(`${pkg}/${file} is not installed`);
}
