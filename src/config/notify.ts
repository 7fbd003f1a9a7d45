/**
 * The `notify` setting: webhooks told of an eval set's events (finished, failed, a task stalled, a
 * hold placed, paused, resumed). A webhook URL may carry a secret (a Slack hook's token is its
 * path), so no message, status or log shows one whole: {@link describeUrl} shows its scheme and
 * host. A URL written as `${NAME}` is read from the environment variable NAME by the process that
 * delivers (like an API key), so the secret never enters the workflow's history either.
 *
 * Pure: zod and nothing else, because workflow code (Temporal's sandbox) imports it.
 */

import { z } from 'zod';

/** How a delivery's body is shaped: Steward's JSON, or a Slack-compatible `{text, blocks}`. */
export type NotifyFormat = 'json' | 'slack';

/** One webhook, normalised. */
export interface NotifyTarget {
  /** An `http(s)://` URL, or `${NAME}`: the URL is the environment variable NAME's value. */
  url: string;
  /** @default 'json' */
  format: NotifyFormat;
}

const FORMATS: readonly NotifyFormat[] = ['json', 'slack'];
const HTTP_URL = /^(https?):\/\/(?:[^@/?#\s]*@)?([^/?#\s]+)[^\s]*$/i;
const ENV_URL = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

/** The environment variable a `${NAME}` URL names, or undefined for a literal URL. */
export function urlVariable(url: string): string | undefined {
  return ENV_URL.exec(url)?.[1];
}

/**
 * A URL as Steward shows it: scheme and host only (`https://hooks.slack.com/…`), or `${NAME}` as
 * written. Never the path, the query or credentials, where webhooks keep their secrets.
 */
export function describeUrl(url: string): string {
  if (urlVariable(url) !== undefined) return url;
  const match = HTTP_URL.exec(url);
  return match ? `${match[1].toLowerCase()}://${match[2]}/…` : '(not a URL)';
}

/** Why `url` cannot be a webhook, or undefined when it can. */
function urlProblem(url: string): string | undefined {
  return HTTP_URL.test(url) || ENV_URL.test(url)
    ? undefined
    : 'expected an http(s):// URL, or ${NAME} to read it from an environment variable';
}

type Issue = { path: PropertyKey[]; message: string; input?: unknown };

/** One target as written: a URL, or `{url, format}`. Issues never carry a URL whole. */
function readTarget(raw: unknown, path: PropertyKey[], issues: Issue[]): NotifyTarget | undefined {
  const written = typeof raw === 'string' ? { url: raw } : raw;
  if (typeof written !== 'object' || written === null || Array.isArray(written)) {
    issues.push({ path, message: 'expected a URL or {url, format}' });
    return undefined;
  }
  const { url, format = 'json', ...rest } = written as Record<string, unknown>;
  for (const key of Object.keys(rest)) issues.push({ path, message: `unknown key "${key}"` });
  const at = typeof raw === 'string' ? path : [...path, 'url'];
  if (typeof url !== 'string') {
    issues.push({ path: at, message: 'expected a URL' });
    return undefined;
  }
  const problem = urlProblem(url);
  if (problem) issues.push({ path: at, message: problem, input: describeUrl(url) });
  if (!FORMATS.includes(format as NotifyFormat)) {
    issues.push({
      path: [...path, 'format'],
      message: 'expected "json" or "slack"',
      input: format,
    });
  }
  return problem ? undefined : { url, format: format as NotifyFormat };
}

/**
 * `notify`: one webhook or a list, each a URL or `{url, format}`; normalised to a list of
 * {@link NotifyTarget}. A bad value is reported without its URL.
 */
export const notifySchema = z.unknown().transform((raw, ctx): NotifyTarget[] => {
  const list = Array.isArray(raw) ? raw : [raw];
  const issues: Issue[] = [];
  if (list.length === 0) issues.push({ path: [], message: 'expected at least one webhook' });
  const targets = list.map((item, i) => readTarget(item, Array.isArray(raw) ? [i] : [], issues));
  for (const issue of issues) {
    ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message, input: issue.input });
  }
  return issues.length > 0 ? z.NEVER : (targets as NotifyTarget[]);
});

/**
 * `notify` as text (a flag or `STEWARD_NOTIFY`): comma-separated URLs, each optionally prefixed
 * `slack:` for a Slack-compatible body, e.g. `slack:https://hooks.slack.com/…,https://x.example/h`.
 */
export function parseNotifyText(text: string): { value: NotifyTarget[] } | { error: string } {
  const targets: NotifyTarget[] = [];
  for (const part of text.split(',').map((p) => p.trim())) {
    const slack = part.startsWith('slack:');
    const url = slack ? part.slice('slack:'.length) : part;
    const problem = url === '' ? 'expected a URL' : urlProblem(url);
    if (problem) return { error: `${problem} (${describeUrl(url)})` };
    targets.push({ url, format: slack ? 'slack' : 'json' });
  }
  return { value: targets };
}

/** Settings as Steward shows them (status): each webhook by its scheme and host only. */
export function showNotify<T extends { notify?: NotifyTarget[] }>(settings: T): T {
  if (!settings.notify) return settings;
  return { ...settings, notify: settings.notify.map((t) => ({ ...t, url: describeUrl(t.url) })) };
}
