/**
 * The dashboard's one page. It polls `data.json` (the numbers and the charts' Vega-Lite spec,
 * both made by the server: src/dashboard/model.ts, charts.ts) and draws them with Vega and
 * Vega-Lite served from node_modules, so it needs no network. Each number sits in a cell marked
 * `data-task`/`data-account`/`data-host` and `data-field` with its raw value in `data-value`.
 */
import { MEMORY_FLOOR } from '../core/slots';

/** How often the page asks for new numbers. */
export const POLL_MS = 2_000;

const STYLE = `
body { font: 14px Helvetica, Arial, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; margin: 0 0 .2em; }
.meta { color: #666; margin-bottom: 1em; }
.error { color: #b00; }
table { border-collapse: collapse; margin: .5em 0 1.5em; }
th, td { padding: .25em .7em; border-bottom: 1px solid #ddd; text-align: right; white-space: nowrap; }
th { text-align: left; }
td:first-child, td.text { text-align: left; }
td.held { color: #b60; }
h2 { font-size: 1.05em; margin: 1em 0 .3em; }
#history td { white-space: normal; }
`;

// Plain browser JavaScript: it runs in the page, not in Node.
const SCRIPT = `
const POLL_MS = ${POLL_MS};
let view = null;
let lastSpec = '';

function cell(row, text, attrs, cls) {
  const td = document.createElement('td');
  td.textContent = text;
  for (const [k, v] of Object.entries(attrs || {})) td.dataset[k] = String(v);
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}
function table(id, headers, rows) {
  const t = document.getElementById(id);
  t.replaceChildren();
  const head = t.insertRow();
  for (const h of headers) {
    const th = document.createElement('th');
    th.textContent = h;
    head.appendChild(th);
  }
  for (const fill of rows) fill(t.insertRow());
}
function num(n, digits) {
  return n === null || n === undefined ? '–' : digits ? n.toFixed(digits) : String(n);
}
function duration(s) {
  if (s === null || s === undefined) return '–';
  if (s === 0) return 'done';
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
  return (h ? h + 'h ' : '') + (h || m ? m + 'm ' : '') + String(sec).padStart(h || m ? 2 : 1, '0') + 's';
}
function taskRow(t) {
  return (row) => {
    const at = (field, text, value, cls) =>
      cell(row, text, { task: t.name, field, value: value === undefined ? text : value }, cls);
    at('name', t.name, t.name, 'text');
    at('state', t.state, t.state, 'text');
    at('done', t.completed + '/' + t.samples, t.completed);
    at('rate', num(t.rate_per_min, 1) + (t.rate_per_min === null ? '' : '/min'), t.rate_per_min);
    at('eta', duration(t.eta_seconds), t.eta_seconds);
    at('errored', num(t.errored), t.errored);
    at('limited', num(t.limited), t.limited);
    at('stuck', num(t.stuck), t.stuck);
    at('in_flight', num(t.in_flight), t.in_flight);
    at('setpoint', num(t.setpoint), t.setpoint);
    at('connection_limit', num(t.connection_limit), t.connection_limit);
    at('rate_limit_episodes', num(t.rate_limit_episodes), t.rate_limit_episodes);
    const ramp = t.held !== null ? 'held: ' + t.held : (t.ramp_state || '–') + (t.ramp_reason ? ' (' + t.ramp_reason + ')' : '');
    at('ramp', ramp, ramp, t.held !== null ? 'text held' : 'text');
  };
}
function accountRow(a) {
  return (row) => {
    const at = (field, text, value) =>
      cell(row, text, { account: a.account, field, value: value === undefined ? text : value });
    cell(row, a.account, { account: a.account, field: 'account' }, 'text');
    at('tasks', a.tasks.join(', '));
    at('connection_ceiling', num(a.connection_ceiling), a.connection_ceiling);
    at('controller_limit', num(a.controller_limit), a.controller_limit);
    at('in_flight', num(a.in_flight), a.in_flight);
    at('wall', a.wall ? String(a.wall.level) : '–');
    at('clamp', num(a.clamp), a.clamp);
    at('pacing', a.pacing && a.pacing.pacing ? 'yes (' + (a.pacing.binding || '') + ')' : 'no');
    at('rate_limit_episodes', num(a.rate_limit_episodes), a.rate_limit_episodes);
  };
}
function gib(bytes) {
  return (bytes / 1073741824).toFixed(1) + ' GiB';
}
function hostRow(h) {
  return (row) => {
    const at = (field, text, value) =>
      cell(row, text, { host: h.host, field, value: value === undefined ? text : value });
    cell(row, h.host, { host: h.host, field: 'host' }, 'text');
    at('total_bytes', gib(h.total_bytes), h.total_bytes);
    at('headroom_bytes', gib(h.headroom_bytes) + ' (' + Math.round(100 * h.headroom_bytes / h.total_bytes) + '%)',
      h.headroom_bytes);
    const low = (100 * h.lowest_headroom_share).toFixed(1) + '%' +
      (h.lowest_headroom_share < ${MEMORY_FLOOR} ? ' (climbs held)' : '');
    at('lowest_headroom_share', low, h.lowest_headroom_share);
    at('fleet_resident_bytes', gib(h.fleet_resident_bytes), h.fleet_resident_bytes);
    at('processes', num(h.processes), h.processes);
  };
}
function historyRow(e) {
  return (row) => {
    cell(row, e.time.slice(11, 19), {}, 'text');
    cell(row, e.account ? 'account ' + e.account : e.task, {}, 'text');
    cell(row, e.kind, {}, 'text');
    cell(row, e.from === null && e.to === null ? '' : (e.from ?? '') + ' → ' + (e.to ?? ''), {});
    cell(row, e.reason + (e.by ? ' (by ' + e.by + ')' : ''), {}, 'text');
  };
}
async function draw(spec) {
  const text = JSON.stringify(spec);
  if (text === lastSpec) return;
  lastSpec = text;
  const next = new vega.View(vega.parse(vegaLite.compile(spec).spec), {
    renderer: 'svg', container: '#charts', hover: true,
  });
  await next.runAsync();
  if (view) view.finalize();
  view = next;
}
async function refresh() {
  const meta = document.getElementById('meta');
  try {
    const res = await fetch('data.json', { cache: 'no-store' });
    const body = await res.json();
    if (!res.ok) throw new Error(body.error || res.statusText);
    const d = body.data;
    document.getElementById('title').textContent = d.eval_set + ': ' + d.state;
    const done = d.tasks.reduce((n, t) => n + t.completed, 0);
    const total = d.tasks.reduce((n, t) => n + t.samples, 0);
    meta.className = 'meta';
    const away = d.workers === 'not answering'
      ? ' · workers not answering: numbers as recorded' +
        (d.recorded_at ? ' at ' + d.recorded_at.slice(11, 19) : '')
      : '';
    meta.textContent = done + '/' + total + ' samples · ' + d.tends.length + ' tends · read ' +
      d.read_at.slice(11, 19) + away + (d.error ? ' · ' + d.error : '') +
      (d.log_dir ? ' · ' + d.log_dir : '');
    document.body.dataset.workers = d.workers || '';
    const failing = d.failing || [];
    if (failing.length > 0) {
      meta.className = 'meta error';
      meta.textContent += failing.map((f) =>
        ' · failing: ' + f.workflow_id + ': ' + f.step + ', attempt ' + f.attempt + ': ' + f.error).join('');
    }
    table('tasks', ['task', 'state', 'done', 'rate', 'ETA', 'errored', 'limited', 'stuck',
      'in flight', 'setpoint', 'connections', '429s (window)', 'ramp'], d.tasks.map(taskRow));
    document.getElementById('accounts-head').hidden = d.accounts.length === 0;
    table('accounts', d.accounts.length === 0 ? [] : ['account', 'tasks', 'ceiling', 'controller limit',
      'in flight', 'wall', 'clamp', 'pacing', '429s (window)'], d.accounts.map(accountRow));
    document.getElementById('hosts-head').hidden = d.hosts.length === 0;
    table('hosts', d.hosts.length === 0 ? [] : ['host', 'RAM', 'headroom', 'lowest (window)',
      'fleet resident', 'processes'], d.hosts.map(hostRow));
    table('history', ['time', 'task', 'kind', 'move', 'reason'],
      d.history.slice(-50).reverse().map(historyRow));
    document.body.dataset.tends = String(d.tends.length);
    document.body.dataset.readAt = d.read_at;
    await draw(body.spec);
    document.body.dataset.drawn = String(d.tends.length);
  } catch (err) {
    meta.className = 'meta error';
    meta.textContent = 'cannot read the eval set: ' + err.message;
  }
}
// One read at a time: the next starts POLL_MS after the last one ended.
async function poll() {
  await refresh();
  setTimeout(poll, POLL_MS);
}
poll();
`;

/** The page's HTML. */
export function dashboardPage(name: string): string {
  const title = name.replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>steward: ${title}</title>
<style>${STYLE}</style>
<script src="vega.min.js"></script>
<script src="vega-lite.min.js"></script>
</head>
<body>
<h1 id="title">${title}</h1>
<div id="meta" class="meta">loading…</div>
<table id="tasks"></table>
<h2 id="accounts-head" hidden>Provider accounts</h2>
<table id="accounts"></table>
<h2 id="hosts-head" hidden>Hosts (memory)</h2>
<table id="hosts"></table>
<div id="charts"></div>
<h2>Ramp history (latest first)</h2>
<table id="history"></table>
<script>${SCRIPT}</script>
</body>
</html>
`;
}
