/**
 * Delivers one eval-set event to one webhook: a POST of JSON (Steward's fields) or of a
 * Slack-compatible `{text, blocks}` body. One attempt per call, with a timeout; the workflow's
 * retry policy makes the attempts (src/workflows/notifier.ts). No message names a webhook by more
 * than its scheme and host: its path may be a secret.
 */
import { ApplicationFailure } from '@temporalio/common';
import { describeUrl, urlVariable } from '../config/notify';
import { ErrorType } from '../errors';
import type { NotifyEvent } from '../workflows/notify';
import type { NotifyDelivery } from '../workflows/types';

/** One attempt's time, connection to last byte. */
export const NOTIFY_ATTEMPT_TIMEOUT_MS = 10_000;

export type NotifyArgs = NotifyDelivery;

export interface NotifyDeps {
  env: NodeJS.ProcessEnv;
  /** @default NOTIFY_ATTEMPT_TIMEOUT_MS */
  timeoutMs?: number;
}

export function createNotifyActivities(deps: NotifyDeps) {
  return {
    async notify({ target, event }: NotifyArgs): Promise<void> {
      const shown = describeUrl(target.url);
      const url = resolveUrl(target.url, deps.env);
      const body = target.format === 'slack' ? slackBody(event) : jsonBody(event);
      let status: number;
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': 'steward' },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(deps.timeoutMs ?? NOTIFY_ATTEMPT_TIMEOUT_MS),
        });
        status = response.status;
        await response.arrayBuffer().catch(() => undefined);
      } catch (err) {
        // Only the error's code: a message could quote the URL.
        throw ApplicationFailure.retryable(
          `webhook ${shown}: ${networkReason(err)}`,
          ErrorType.notifyFailed,
        );
      }
      if (status >= 200 && status < 300) return;
      // A refusal that another attempt will not change (a revoked hook: 404, 403) is not retried.
      const retryable = status >= 500 || status === 408 || status === 429;
      const message = `webhook ${shown}: HTTP ${status}`;
      throw retryable
        ? ApplicationFailure.retryable(message, ErrorType.notifyFailed)
        : ApplicationFailure.nonRetryable(message, ErrorType.notifyFailed);
    },
  };
}

export type NotifyActivities = ReturnType<typeof createNotifyActivities>;

/** The URL to POST to: as written, or `${NAME}`'s value in this process's environment. */
function resolveUrl(url: string, env: NodeJS.ProcessEnv): string {
  const name = urlVariable(url);
  if (name === undefined) return url;
  const value = env[name];
  if (value === undefined || value.trim() === '') {
    throw ApplicationFailure.nonRetryable(
      `webhook ${url}: the environment variable ${name} is not set in the worker's environment`,
      ErrorType.notifyFailed,
    );
  }
  return value.trim();
}

function networkReason(err: unknown): string {
  const error = err as { name?: string; cause?: { code?: string } };
  if (error.name === 'TimeoutError') return 'no answer in time';
  return error.cause?.code ?? error.name ?? 'request failed';
}

/** Steward's JSON body: the event's fields, and its text as a person would read it. */
export function jsonBody(event: NotifyEvent): NotifyEvent & { text: string } {
  return { ...event, text: eventText(event, 'plain') };
}

/** A Slack-compatible incoming-webhook body: `text` (what every compatible service reads), and
 * the same text as one mrkdwn section. */
export function slackBody(event: NotifyEvent): { text: string; blocks: object[] } {
  const text = `${EMOJI[event.kind]} ${eventText(event, 'slack')}`;
  return { text, blocks: [{ type: 'section', text: { type: 'mrkdwn', text } }] };
}

const EMOJI: Record<NotifyEvent['kind'], string> = {
  finished: ':white_check_mark:',
  failed: ':x:',
  stalled: ':hourglass:',
  stuck: ':rotating_light:',
  hold: ':pause_button:',
  pause: ':double_vertical_bar:',
  unpause: ':arrow_forward:',
};

/** `&`, `<` and `>` are Slack's control characters in text. */
function escapeSlack(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/** The event in a sentence (and, when finished, a line per task); Slack's marks names bold. */
export function eventText(event: NotifyEvent, style: 'plain' | 'slack'): string {
  const esc = style === 'slack' ? escapeSlack : (s: string) => s;
  const strong = (s: string) => (style === 'slack' ? `*${esc(s)}*` : s);
  const set = `eval set ${strong(event.eval_set)}`;
  const whom = (task: string) => (task === '*' ? 'all tasks' : `task ${strong(task)}`);
  const why = (reason: string, by?: string) =>
    `${reason ? `: ${esc(reason)}` : ''}${by ? ` (by ${esc(by)})` : ''}`;
  switch (event.kind) {
    case 'finished': {
      const sum = (key: 'samples' | 'completed' | 'errored') =>
        event.tasks.reduce((n, t) => n + t[key], 0);
      const head =
        event.status === 'success'
          ? `Eval set ${strong(event.eval_set)} finished`
          : `Eval set ${strong(event.eval_set)} finished with errors`;
      const lines = event.tasks.map(
        (t) => `• ${esc(t.name)}: ${t.completed}/${t.samples} completed, ${t.errored} errored`,
      );
      return [
        `${head}: ${sum('completed')}/${sum('samples')} samples completed, ${sum('errored')} errored`,
        ...lines,
      ].join('\n');
    }
    case 'failed':
      return `Eval set ${strong(event.eval_set)} failed${
        event.task ? ` (task ${strong(event.task)})` : ''
      }: ${esc(event.message)}`;
    case 'stalled':
      return (
        `Task ${strong(event.task)} of ${set} stalled: no sample completed in ` +
        `${event.windows} tends (since ${event.since}) with ${event.in_flight} in flight ` +
        `(${event.completed + event.errored}/${event.samples} done)`
      );
    case 'stuck':
      return (
        `Eval set ${strong(event.eval_set)} is stuck: workflow ${strong(event.workflow_id)} ` +
        `cannot make progress (workflow task attempt ${event.attempt}): ${esc(event.error)}`
      );
    case 'hold':
      return `Ramp hold placed on ${whom(event.task)} of ${set}${why(event.reason, event.by)}`;
    case 'pause':
      return `Eval set ${strong(event.eval_set)} paused${why(event.reason, event.by)}`;
    case 'unpause':
      return `Eval set ${strong(event.eval_set)} resumed${why(event.reason, event.by)}`;
  }
}
