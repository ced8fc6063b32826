// "Recent verdicts": the jobs that ended, from the history database, newest first. Plain
// text rows; the list is rebuilt only when it changes.

import { el, setText } from './dom.js';

let shown = '';

/** When `ms` was, for people: "5 min ago", "3 h ago", "2 d ago". */
function ago(ms, now = Date.now()) {
  const minutes = Math.max(0, Math.round((now - ms) / 60000));
  if (minutes < 1) return 'just now';
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  return hours < 48 ? `${hours} h ago` : `${Math.round(hours / 24)} d ago`;
}

/** Renders `jobs` ([{ command, mode, ended_at_ms, verdict: { fits, text } }]). */
export function renderRecent(jobs) {
  const key = JSON.stringify(jobs.map((j) => [j.command, j.ended_at_ms, j.verdict?.text]));
  const section = document.getElementById('recent');
  section.hidden = jobs.length === 0;
  setText(document.getElementById('recent-title'), `Recent verdicts (${jobs.length})`);
  if (key === shown) return;
  shown = key;
  const rows = jobs.map((j) => el('li', { class: 'recent-job', dataset: { fits: String(!!j.verdict?.fits) } },
    el('span', { class: 'recent-command', text: j.command, attrs: { title: j.command } }),
    el('span', { class: `recent-verdict ${j.verdict?.fits ? 'fits' : 'no-fit'}`, text: j.verdict?.text ?? '' }),
    el('span', { class: 'recent-when', text: `${j.mode} · ${ago(j.ended_at_ms)}` })));
  document.getElementById('recent-jobs').replaceChildren(...rows);
}
