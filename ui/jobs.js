// The Jobs section: one row per watched, guarded or external job, keyed by job id.

import { el, setText, setAttr, placeChildren } from './dom.js';
import { formatBytes, formatSignedBytes, modeWord, stateWord, budgetUse } from './format.js';

const rows = new Map(); // job id -> row element

/** The buttons of a job's row: [action, label, title, shown(job)]. */
const CONTROLS = [
  ['pause', 'Pause', 'Pause it now (SIGSTOP): it keeps its memory and stops growing swap',
    (job) => job.mode === 'guard' && job.state === 'running'],
  ['resume', 'Resume', 'Continue it, with a new budget from swap in use now',
    (job) => job.state === 'paused'],
  ['stop', 'Stop', 'Stop it now (SIGTERM, then SIGKILL)', (job) => job.state === 'paused'],
];

function createRow(id, onRelease, onControl) {
  const command = el('span', { class: 'job-command' });
  const badge = el('span', { class: 'badge mode' });
  const release = el('button', {
    class: 'button small release', type: 'button', dataset: { action: 'release', id: String(id) },
  });
  release.addEventListener('click', () => onRelease(row.jobData, release));
  const controls = CONTROLS.map(([action, label, title]) => {
    const button = el('button', {
      class: `button small job-${action}`, type: 'button', text: label, dataset: { action, id: String(id) },
    });
    setAttr(button, 'title', title);
    button.addEventListener('click', () => onControl(row.jobData, action, button));
    return button;
  });
  const fill = el('div', { class: 'bar-fill' });
  // The bar and the verdict are only in the DOM when shown (`.job .verdict` = a verdict).
  const bar = el('div', { class: 'bar', attrs: { role: 'meter', 'aria-valuemin': '0' } }, fill);
  const growth = el('span', { class: 'job-growth num' });
  const meter = el('div', { class: 'job-meter' }, growth);
  const verdict = el('div', { class: 'verdict' });
  // The stages the job marked (`headroom mark`), with the swap each one added.
  const stages = el('div', { class: 'job-stages' });
  const stateEl = el('span', { class: 'job-state' });
  const pid = el('span', { class: 'job-pid num' });
  const peak = el('span', { class: 'job-peak num' });
  const meta = el('div', { class: 'job-meta' }, stateEl, pid, peak);
  const row = el('li', { class: 'job', dataset: { id: String(id) } },
    el('div', { class: 'job-main' }, badge, command, ...controls, release), meter, meta);
  row.parts = { command, badge, release, controls, meter, bar, fill, growth, verdict, stages, meta, stateEl, pid, peak };
  return row;
}

function updateRow(row, job) {
  const p = row.parts;
  row.jobData = job;
  row.dataset.mode = job.mode;
  row.dataset.state = job.state;
  setText(p.command, job.command);
  setAttr(p.command, 'title', job.command);
  setText(p.badge, modeWord(job.mode));
  p.badge.dataset.mode = job.mode;
  setAttr(p.badge, 'title', job.mode === 'external'
    ? 'Started by `headroom guard` in a terminal (read-only here)'
    : job.mode === 'guard' ? 'Stopped if swap grows past its budget' : 'Watched: notified, never stopped');

  // Release (Unwatch, Unguard): only for jobs this app controls and that still run.
  const canRelease = !job.read_only && job.mode !== 'external' && job.state === 'running';
  p.release.hidden = !canRelease;
  setText(p.release, job.mode === 'watch' ? 'Unwatch' : 'Unguard');
  CONTROLS.forEach(([, , , shown], i) => {
    p.controls[i].hidden = job.read_only || job.mode === 'external' || !shown(job);
  });
  setAttr(p.release, 'title', job.mode === 'watch'
    ? 'Stop watching (the process keeps running)'
    : 'Stop guarding (the process keeps running)');

  // Swap growth, against the budget when there is one.
  const use = budgetUse(job.swap_growth_bytes, job.swap_budget_bytes);
  const growth = formatSignedBytes(job.swap_growth_bytes ?? 0);
  if (use && job.mode !== 'watch') {
    if (p.bar.parentNode !== p.meter) p.meter.prepend(p.bar);
    p.fill.style.width = `${(use.fraction * 100).toFixed(1)}%`;
    p.bar.dataset.level = use.level;
    setAttr(p.bar, 'aria-valuemax', job.swap_budget_bytes);
    setAttr(p.bar, 'aria-valuenow', Math.max(0, job.swap_growth_bytes ?? 0));
    setText(p.growth, `swap ${growth} of ${formatBytes(job.swap_budget_bytes, { trim: true })}`);
    p.growth.dataset.level = use.level;
  } else {
    p.bar.remove();
    setText(p.growth, `swap ${growth}`);
    p.growth.dataset.level = (job.swap_growth_bytes ?? 0) > 0 ? 'warn' : 'ok';
  }

  // Verdict when done.
  const v = job.verdict;
  if (!v) p.verdict.remove();
  else if (!p.verdict.parentNode) p.meta.before(p.verdict);
  if (v) {
    setText(p.verdict, v.text || (v.fits ? 'fits' : "doesn't fit"));
    p.verdict.dataset.fits = v.fits ? 'true' : 'false';
    p.verdict.classList.toggle('fits', !!v.fits);
    p.verdict.classList.toggle('no-fit', !v.fits);
  }

  const marked = job.stages ?? [];
  if (!marked.length) p.stages.remove();
  else if (!p.stages.parentNode) p.meta.before(p.stages);
  setText(p.stages, marked.length ? `stages: ${marked.map((st) => (st.swap_growth_bytes > 0
    ? `${st.name} ${formatSignedBytes(st.swap_growth_bytes)}` : st.name)).join(' · ')}` : '');

  const pauses = job.pauses ? ` · paused ${job.pauses === 1 ? 'once' : `${job.pauses}×`}` : '';
  setText(p.stateEl, stateWord(job.state) + (job.state === 'paused' ? '' : pauses));
  p.stateEl.dataset.state = job.state;
  setText(p.pid, `pid ${job.pid}`);
  p.peak.hidden = job.peak_footprint_bytes == null;
  setText(p.peak, job.peak_footprint_bytes == null
    ? '' : `peak footprint ${formatBytes(job.peak_footprint_bytes)}`);
}

/** Renders `jobs` into #jobs, reusing rows by id. */
export function renderJobs(jobs, { onRelease, onControl }) {
  const list = document.getElementById('jobs');
  const empty = document.getElementById('jobs-empty');
  const seen = new Set();
  const nodes = [];
  for (const job of jobs) {
    const key = String(job.id);
    seen.add(key);
    let row = rows.get(key);
    if (!row) {
      row = createRow(job.id, onRelease, onControl);
      rows.set(key, row);
    }
    updateRow(row, job);
    nodes.push(row);
  }
  for (const key of Array.from(rows.keys())) if (!seen.has(key)) rows.delete(key);
  placeChildren(list, nodes);
  empty.hidden = jobs.length > 0;
  list.hidden = jobs.length === 0;
}

/** Pids of jobs still running, with their mode ("watch" / "guard" / "external"). */
export function trackedPids(jobs) {
  const map = new Map();
  for (const job of jobs) {
    if (job.state === 'running' || job.state === 'paused' || job.state === 'stopping') {
      // A guard outranks a watch on the same pid.
      if (map.get(job.pid) !== 'guard') map.set(job.pid, job.mode);
    }
  }
  return map;
}
