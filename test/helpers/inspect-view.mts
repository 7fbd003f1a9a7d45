/**
 * Serves log dirs with `inspect view` and loads each in headless Chromium: prints each page's text
 * as JSON and saves a screenshot of each. A script of its own (run with tsx) because puppeteer-core
 * is an ES module, which Jest's CommonJS runtime cannot load.
 *
 *   tsx test/helpers/inspect-view.mts '{"python": ..., "chromium": ..., "artifacts": ...,
 *     "views": [{ "name": "hello", "logDir": ..., "expect": ["arithmetic", "capitals"] }]}'
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

interface Request {
  python: string;
  chromium: string;
  artifacts: string;
  /**
   * Each log dir to show, and the texts to wait for on its page; `sample`: then open that task's
   * log and that sample (clicking, as a user does) and wait for its texts too.
   */
  views: Array<{
    name: string;
    logDir: string;
    expect: string[];
    /**
     * Rows to wait for: a line that is `first`, followed within `within` lines by each of
     * `contains` (the viewer fills a task's columns after its name appears).
     */
    rows?: Array<{ first: string; contains: string[]; within: number }>;
    sample?: { task: string; id: string; expect: string[] };
  }>;
}

type Page = Awaited<ReturnType<Awaited<ReturnType<typeof puppeteer.launch>>['newPage']>>;

function bodyText(page: Page): Promise<string> {
  return page.evaluate(
    () =>
      (globalThis as unknown as { document: { body: { innerText: string } } }).document.body
        .innerText,
  );
}

/**
 * Waits until the page shows every text and every row, and returns the page's text of that
 * moment. The viewer loads each log's header on its own and may show a row without it again
 * later (when it refreshes the list), so what it showed is taken when it showed it.
 */
async function waitForTexts(
  page: Page,
  expected: string[],
  rows: Array<{ first: string; contains: string[]; within: number }> = [],
  timeoutMs = TIMEOUT_MS,
): Promise<string> {
  const shown = await page
    .waitForFunction(
      (texts: string[], wanted: typeof rows) => {
        const body = (globalThis as unknown as { document: { body: { innerText: string } } })
          .document.body;
        const lines = body.innerText.split('\n').map((l) => l.trim());
        // No named functions in here: tsx would wrap them in a helper the page does not have.
        const all =
          texts.every((t) => body.innerText.includes(t)) &&
          wanted.every((row) => {
            const at = lines.indexOf(row.first);
            const after = lines.slice(at + 1, at + 1 + row.within);
            // The row's own cells only: they end where the next row's name begins (the viewer
            // loads each log's header on its own, so a neighbour's count must not stand in).
            const next = after.findIndex((l) => wanted.some((other) => other.first === l));
            const own = next < 0 ? after : after.slice(0, next);
            return at >= 0 && row.contains.every((t) => own.includes(t));
          });
        return all ? body.innerText : false;
      },
      { timeout: timeoutMs },
      expected,
      rows,
    )
    .catch(async (err: Error) => {
      // What the page showed instead is what tells a slow viewer from a wrong log.
      const text = await bodyText(page).catch((e: Error) => `(unreadable: ${e.message})`);
      throw new Error(
        `${err.message}\nwanted ${JSON.stringify({ expected, rows })}\nthe page showed:\n${text.slice(0, 4_000)}`,
      );
    });
  return (await shown.jsonValue()) as string;
}

/**
 * The page's text once it has stopped changing for a while: the viewer fills a task's row (its
 * samples, score, tokens) after the row itself appears, as each log's header arrives.
 */
async function settledText(page: Page, quietMs = 2_000): Promise<string> {
  const deadline = Date.now() + TIMEOUT_MS;
  let text = await bodyText(page);
  let since = Date.now();
  while (Date.now() - since < quietMs) {
    if (Date.now() > deadline) throw new Error('the page kept changing');
    await new Promise((resolve) => setTimeout(resolve, 250));
    const now = await bodyText(page);
    if (now !== text) {
      text = now;
      since = Date.now();
    }
  }
  return text;
}

/** Clicks what `xpath` finds; a locator retries while the viewer re-renders it. */
async function click(page: Page, xpath: string): Promise<void> {
  await page.locator(`::-p-xpath(${xpath})`).setTimeout(TIMEOUT_MS).click();
}

const TIMEOUT_MS = 120_000;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function serve(
  python: string,
  logDir: string,
): Promise<{ url: string; server: ChildProcess }> {
  const port = await freePort();
  const args = ['-m', 'inspect_ai', 'view', '--log-dir', logDir, '--port', String(port)];
  const server = spawn(python, args, { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}/`;
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    if (server.exitCode !== null) throw new Error(`inspect view exited ${server.exitCode}`);
    if (
      await fetch(url).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { url, server };
    if (Date.now() > deadline) throw new Error(`inspect view on ${logDir} did not answer`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function stop(server: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (server.exitCode !== null) return resolve();
    server.once('exit', () => resolve());
    server.kill('SIGTERM');
  });
}

async function main(request: Request): Promise<Record<string, string>> {
  await mkdir(request.artifacts, { recursive: true });
  const browser = await puppeteer.launch({
    executablePath: request.chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  const texts: Record<string, string> = {};
  try {
    for (const view of request.views) {
      const { url, server } = await serve(request.python, view.logDir);
      try {
        const page = await browser.newPage();
        await page.setViewport({ width: 1400, height: 640 });
        await page.goto(url, { waitUntil: 'networkidle0', timeout: TIMEOUT_MS });
        // Once in four CI runs the viewer never showed a log's row whole on its first load (the
        // reader tests of the same logs passed): a reload that shows it still proves the logs.
        const shownText = await waitForTexts(page, view.expect, view.rows, TIMEOUT_MS / 2).catch(
          async (first: Error) => {
            console.error(`reloading ${view.name}: ${first.message}`);
            await page.reload({ waitUntil: 'networkidle0', timeout: TIMEOUT_MS });
            return waitForTexts(page, view.expect, view.rows);
          },
        );
        texts[view.name] = view.rows ? shownText : await settledText(page);
        await page.screenshot({
          path: path.join(request.artifacts, `inspect-view-${view.name}.png`),
        });
        if (view.sample) {
          await page.setViewport({ width: 1400, height: 760 });
          await click(page, `.//a[contains(., "${view.sample.task}")]`);
          await click(page, `.//*[normalize-space(text())="${view.sample.id}"]`);
          await waitForTexts(page, view.sample.expect);
          texts[`${view.name}/sample`] = await settledText(page);
          await page.screenshot({
            path: path.join(request.artifacts, `inspect-view-${view.name}-sample.png`),
          });
        }
        await page.close();
      } finally {
        await stop(server);
      }
    }
  } finally {
    await browser.close();
  }
  return texts;
}

main(JSON.parse(process.argv[2] ?? '{}') as Request).then(
  (texts) => process.stdout.write(JSON.stringify(texts)),
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(1);
  },
);
