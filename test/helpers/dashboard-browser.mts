/**
 * Drives `steward dashboard` in headless Chromium for test/dashboard.test.ts, one step per line
 * on stdin, each answered by one JSON line on stdout: what the page shows (every number cell,
 * the tends it has drawn, the chart's marks). A script of its own (run with tsx) because
 * puppeteer-core is an ES module, which Jest's CommonJS runtime cannot load.
 *
 *   tsx test/helpers/dashboard-browser.mts '{"chromium": ..., "url": ...}'
 *   stdin: `first` | `next-tend` | `moved` | `workers-away` | `screenshot <file>` | `quit`
 */
import { createInterface } from 'node:readline';
import puppeteer from 'puppeteer-core';

interface Request {
  chromium: string;
  url: string;
}

/** What the page shows. */
export interface Shown {
  /** Cells by task (or account), then field: the raw value the page shows (`data-value`). */
  tasks: Record<string, Record<string, string>>;
  accounts: Record<string, Record<string, string>>;
  hosts: Record<string, Record<string, string>>;
  /** Tend records the page has read, and drawn. */
  tends: number;
  drawn: number;
  readAt: string;
  /** `answering`, `not answering`, or empty once the eval set has ended. */
  workers: string;
  /** Line paths and rects the charts drew. */
  lines: number;
  rects: number;
  historyRows: number;
  text: string;
}

const TIMEOUT_MS = 30_000;

/** Evaluated in the page: what it shows, as {@link Shown}. */
const SHOWN = `(() => {
  const cells = (attr) => {
    const out = {};
    for (const td of document.querySelectorAll('td[data-' + attr + ']')) {
      (out[td.dataset[attr]] ??= {})[td.dataset.field] = td.dataset.value ?? '';
    }
    return out;
  };
  return {
    tasks: cells('task'),
    accounts: cells('account'),
    hosts: cells('host'),
    tends: Number(document.body.dataset.tends ?? -1),
    drawn: Number(document.body.dataset.drawn ?? -1),
    readAt: document.body.dataset.readAt ?? '',
    workers: document.body.dataset.workers ?? '',
    lines: document.querySelectorAll('#charts .mark-line path').length,
    rects: document.querySelectorAll('#charts .mark-rect path').length,
    historyRows: document.querySelectorAll('#history tr').length - 1,
    text: document.body.innerText,
  };
})()`;

async function main(request: Request): Promise<void> {
  const browser = await puppeteer.launch({
    executablePath: request.chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 900 });
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(String(err)));
  await page.goto(request.url, { waitUntil: 'load', timeout: TIMEOUT_MS });

  // A string, not a function: tsx would wrap the function's inner functions in a helper the
  // page does not have.
  const shown = (): Promise<Shown> => page.evaluate(SHOWN) as Promise<Shown>;
  /** Waits until the page has drawn what it read, and `ok` holds of it. */
  const until = async (ok: (s: Shown) => boolean, what: string): Promise<Shown> => {
    const deadline = Date.now() + TIMEOUT_MS;
    for (;;) {
      const s = await shown();
      if (s.drawn === s.tends && s.tends >= 0 && ok(s)) return s;
      if (Date.now() > deadline)
        throw new Error(`the page never showed ${what}: ${JSON.stringify(s)} ${errors.join('; ')}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  let last: Shown | undefined;
  for await (const line of createInterface({ input: process.stdin })) {
    const [step, arg] = line.trim().split(' ');
    if (step === 'quit') break;
    if (step === 'screenshot') {
      await page.screenshot({ path: arg, fullPage: true });
    } else if (step === 'first') {
      last = await until((s) => s.tends >= 1, 'a tend');
    } else if (step === 'next-tend') {
      const before = last!;
      last = await until((s) => s.tends > before.tends, 'a tend after the first');
    } else if (step === 'moved') {
      last = await until(
        (s) =>
          s.historyRows > 0 &&
          Object.keys(s.accounts).length > 0 &&
          Object.keys(s.hosts).length > 0,
        'a ramp move, a provider account and a host',
      );
    } else if (step === 'workers-away') {
      last = await until((s) => s.workers === 'not answering', 'the workers away');
    } else {
      throw new Error(`unknown step ${step}`);
    }
    process.stdout.write(`${JSON.stringify({ ...last, errors })}\n`);
  }
  await browser.close();
}

main(JSON.parse(process.argv[2] ?? '{}') as Request).then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(1);
  },
);
