// The Processes section: the list (keyed by pid) and the inline guard form under a row.
//
// The list is re-rendered every 2 s. To keep it usable, rows are reused (numbers change in
// place) and, while the pointer is over the list, focus is inside it or the guard form is
// open, rows keep their order (new ones go to the end) so nothing jumps under the cursor.

import { el, setText, setAttr, placeChildren } from './dom.js';
import { formatBytes, fieldError } from './format.js';
import { config } from './state.js';



const rows = new Map(); // pid -> row element
const KEY_DEBOUNCE_MS = 250; // the Guard form asks for a typed key's past runs once typing pauses
let handlers = null; // { onWatch(proc, button), onGuard(proc, budget, killFree, onBudget, key) -> Promise, fitOf(proc, key) -> Promise }
let guard = null; // { pid, name, row: <li>, form parts }
let pointerInside = false;
let lastQuery = null;

function list() {
  return document.getElementById('processes');
}

/** Wires the list once. `h`: { onWatch, onGuard, guardDefaults() -> {budget, killFree} }. */
export function initProcesses(h) {
  handlers = h;
  const ul = list();
  ul.addEventListener('pointerenter', () => { pointerInside = true; });
  ul.addEventListener('pointerleave', () => { pointerInside = false; });
  ul.addEventListener('click', (event) => {
    const button = event.target.closest('button[data-action]');
    if (!button || !ul.contains(button) || button.disabled) return;
    const pid = Number(button.dataset.pid);
    const row = rows.get(pid);
    if (!row) return;
    if (button.dataset.action === 'watch') handlers.onWatch(row.proc, button);
    else if (button.dataset.action === 'guard') toggleGuardForm(row.proc);
  });
}

function holdOrder() {
  const ul = list();
  return pointerInside || guard !== null || ul.contains(document.activeElement);
}

function createRow(proc) {
  const name = el('span', { class: 'proc-name' });
  const tag = el('span', { class: 'proc-tag', hidden: true });
  const sub = el('span', { class: 'proc-sub' });
  const footprint = el('span', { class: 'proc-num footprint num' });
  const swap = el('span', { class: 'proc-num swap num' });
  const pid = String(proc.pid);
  const watchBtn = el('button', {
    class: 'button small', type: 'button', text: 'Watch', dataset: { action: 'watch', pid },
  });
  const guardBtn = el('button', {
    class: 'button small', type: 'button', text: 'Guard', dataset: { action: 'guard', pid },
  });
  const row = el('li', { class: 'proc', dataset: { pid } },
    el('div', { class: 'proc-info' },
      name,
      el('div', { class: 'proc-line' }, tag, sub)),
    footprint,
    swap,
    el('div', { class: 'proc-actions' }, watchBtn, guardBtn));
  row.parts = { name, tag, sub, footprint, swap, watchBtn, guardBtn };
  return row;
}

function updateRow(row, proc, tracked) {
  const p = row.parts;
  row.proc = proc;
  setText(p.name, proc.name);
  setAttr(p.name, 'title', proc.name);
  const command = proc.command && proc.command !== proc.name ? proc.command : '';
  setText(p.sub, command ? `${proc.pid} · ${command}` : String(proc.pid));
  setAttr(p.sub, 'title', proc.command || null);
  setText(p.footprint, formatBytes(proc.footprint_bytes));
  setAttr(p.footprint, 'title', `footprint ${formatBytes(proc.footprint_bytes)}, resident ${formatBytes(proc.resident_bytes)}`);
  setText(p.swap, proc.swap_bytes == null ? '–' : formatBytes(proc.swap_bytes));
  setAttr(p.swap, 'title', proc.swap_bytes == null ? 'swap per process is not available here' : null);
  p.swap.classList.toggle('unknown', proc.swap_bytes == null);

  const mode = tracked.get(proc.pid) || null;
  row.dataset.tracked = mode || '';
  p.tag.hidden = !mode;
  setText(p.tag, mode === 'watch' ? 'watched' : mode ? 'guarded' : '');
  p.watchBtn.disabled = !!mode;
  p.guardBtn.disabled = mode === 'guard' || mode === 'external';
  setAttr(p.watchBtn, 'title', mode ? 'Already in Jobs' : 'Notify when swap grows while it runs; verdict when it ends');
  setAttr(p.guardBtn, 'title', p.guardBtn.disabled ? 'Already guarded' : 'Stop it if swap grows past a budget');
  setAttr(p.guardBtn, 'aria-expanded', guard && guard.pid === proc.pid ? 'true' : 'false');
}

/**
 * Renders the processes returned for `query`: the first rows Rust sent, of `total` that
 * matched. `tracked`: pid -> job mode of running jobs.
 */
export function renderProcesses(procs, total, query, tracked) {
  const ul = list();
  const queryChanged = query !== lastQuery;
  lastQuery = query;

  let order = procs;
  if (!queryChanged && holdOrder()) {
    const byPid = new Map(procs.map((p) => [p.pid, p]));
    const kept = [];
    for (const child of ul.children) {
      const pid = Number(child.dataset.pid);
      if (child.classList.contains('proc') && byPid.has(pid)) {
        kept.push(byPid.get(pid));
        byPid.delete(pid);
      }
    }
    order = kept.concat(procs.filter((p) => byPid.has(p.pid)));
  }

  const nodes = [];
  const seen = new Set();
  for (const proc of order) {
    seen.add(proc.pid);
    let row = rows.get(proc.pid);
    if (!row) {
      row = createRow(proc);
      rows.set(proc.pid, row);
    }
    updateRow(row, proc, tracked);
    nodes.push(row);
    if (guard && guard.pid === proc.pid) nodes.push(guard.row);
  }
  for (const pid of Array.from(rows.keys())) if (!seen.has(pid)) rows.delete(pid);
  if (guard && !seen.has(guard.pid)) closeGuardForm({ silent: true });
  placeChildren(ul, nodes);

  const empty = document.getElementById('processes-empty');
  empty.hidden = procs.length > 0;
  setText(empty, query.trim() ? `No processes match “${query.trim()}”.` : 'No processes.');
  const more = document.getElementById('processes-more');
  more.hidden = total <= procs.length;
  setText(more, `Showing ${procs.length} of ${total}. Search to find the others.`);
}

// ---- Guard form -------------------------------------------------------------------------

function field(id, label, hint) {
  const input = el('input', {
    id, type: 'text', autocomplete: 'off', spellcheck: false,
    attrs: { 'aria-describedby': `${id}-error`, autocapitalize: 'off' },
  });
  const error = el('p', { class: 'field-error', id: `${id}-error`, hidden: true, attrs: { role: 'alert' } });
  const wrap = el('div', { class: 'field' },
    el('label', { attrs: { for: id }, text: label }), input, error,
    hint ? el('p', { class: 'field-hint', text: hint }) : null);
  input.addEventListener('input', () => showFieldError(error, input, ''));
  return { wrap, input, error };
}

function showFieldError(errorEl, input, message) {
  errorEl.hidden = !message;
  setText(errorEl, message);
  if (input) setAttr(input, 'aria-invalid', message ? 'true' : null);
}

function buildGuardRow(proc, defaults) {
  const budget = field('guard-budget', 'Swap budget', 'a size such as 2G');
  const killFree = field('guard-kill-free', 'Stop below free %', 'a percentage');
  budget.input.value = defaults.budget ?? '';
  budget.input.placeholder = config.defaults.default_swap_budget ?? '';
  killFree.input.value = defaults.killFree ?? '';
  killFree.input.placeholder = config.defaults.default_kill_free ?? '';
  killFree.input.inputMode = 'decimal';
  const onBudget = el('select', { id: 'guard-on-budget' },
    el('option', { value: 'stop', text: 'Stop it' }),
    el('option', { value: 'pause', text: 'Pause it (resume later)' }));
  const onBudgetWrap = el('div', { class: 'field' },
    el('label', { attrs: { for: 'guard-on-budget' }, text: 'At the budget' }), onBudget);
  // The run history's key: blank is the command line's (shown as the placeholder).
  const key = field('guard-key', 'History key', 'runs with the same key share a prediction; blank: the command line');
  key.input.classList.add('key-input');
  const general = el('p', { class: 'field-error', id: 'guard-error', hidden: true, attrs: { role: 'alert' } });
  const cancel = el('button', { class: 'button', type: 'button', id: 'guard-cancel', text: 'Cancel' });
  const submit = el('button', { class: 'button primary', type: 'submit', id: 'guard-submit', text: 'Guard' });
  const title = el('div', { class: 'guard-title' },
    el('span', { text: 'Guard' }), el('strong', { text: proc.name }),
    el('span', { class: 'guard-pid', text: `pid ${proc.pid}` }));
  const fitLine = el('p', { class: 'guard-fit', id: 'guard-fit', text: 'Past runs: …' });
  const fit = { line: fitLine, key: key.input, asked: 0, timer: null };
  showFitOf(proc, fit);
  key.input.addEventListener('input', () => {
    clearTimeout(fit.timer);
    fit.timer = setTimeout(() => showFitOf(proc, fit), KEY_DEBOUNCE_MS);
  });
  const form = el('form', { id: 'guard-form', class: 'guard-form', noValidate: true, attrs: { 'aria-label': `Guard ${proc.name}` } },
    title,
    fitLine,
    el('div', { class: 'guard-fields' }, budget.wrap, killFree.wrap, onBudgetWrap),
    key.wrap,
    el('p', { class: 'guard-help', text: 'Stops (or pauses) it and its children when its swap growth passes the budget or free memory stays below the floor. A warning comes first.' }),
    general,
    el('div', { class: 'form-actions' }, cancel, submit));
  const row = el('li', { class: 'guard-row', dataset: { pid: String(proc.pid) } }, form);

  cancel.addEventListener('click', () => closeGuardForm());
  form.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') {
      event.preventDefault();
      event.stopPropagation();
      closeGuardForm();
    }
  });
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (submit.disabled) return;
    showFieldError(budget.error, budget.input, '');
    showFieldError(killFree.error, killFree.input, '');
    showFieldError(general, null, '');
    submit.disabled = true;
    setText(submit, 'Guarding…');
    try {
      await handlers.onGuard(proc, budget.input.value, killFree.input.value, onBudget.value, key.input.value);
      closeGuardForm();
    } catch (error) {
      // Rust names the field at fault: swap_budget, kill_free (on_budget is a choice).
      const { field: which, message } = fieldError(error);
      if (which === 'swap_budget') showFieldError(budget.error, budget.input, message);
      else if (which === 'kill_free') showFieldError(killFree.error, killFree.input, message);
      else showFieldError(general, null, message);
      if (which === 'kill_free') killFree.input.focus();
      else if (which === 'swap_budget') budget.input.focus();
    } finally {
      submit.disabled = false;
      setText(submit, 'Guard');
    }
  });
  return { pid: proc.pid, row, budget, killFree };
}

/** Fills the Guard form's line on the past runs of the key typed (or the process's own):
 *  the prediction and the answer now, and their verdicts (Rust's words), or that it has
 *  none. Only the latest request's answer is shown. */
async function showFitOf(proc, fit) {
  const line = fit.line;
  const asked = ++fit.asked;
  try {
    const r = await handlers.fitOf(proc, fit.key.value);
    if (asked !== fit.asked) return;
    if (!fit.key.value && r?.key) fit.key.placeholder = r.key;
    line.dataset.key = r?.key ?? '';
    const past = Array.isArray(r?.past_verdicts) ? r.past_verdicts : [];
    if (r?.fit) {
      line.dataset.fits = String(!!r.fit.fits);
      setText(line, `Needs about ${formatBytes(r.fit.need_bytes)} (${r.fit.runs} past run${r.fit.runs === 1 ? '' : 's'}): ${r.fit.text}. Last: ${past.join(', ')}`);
    } else {
      delete line.dataset.fits;
      setText(line, `No past run of ${r?.key ?? proc.name} yet: its verdict will be its first.`);
    }
    setAttr(line, 'title', r?.key ? `Key: ${r.key}` : null);
  } catch (error) {
    if (asked !== fit.asked) return;
    setText(line, `Past runs unavailable: ${error}`);
  }
}

function toggleGuardForm(proc) {
  if (guard && guard.pid === proc.pid) {
    closeGuardForm();
    return;
  }
  closeGuardForm({ silent: true });
  guard = buildGuardRow(proc, handlers.guardDefaults());
  const row = rows.get(proc.pid);
  row.after(guard.row);
  row.classList.add('guarding');
  setAttr(row.parts.guardBtn, 'aria-expanded', 'true');
  guard.budget.input.focus();
  guard.budget.input.select();
  guard.row.scrollIntoView({ block: 'nearest' });
}

/** Closes the inline guard form, if open; focus goes back to the row's Guard button. */
function closeGuardForm({ silent = false } = {}) {
  if (!guard) return;
  const { pid, row: formRow } = guard;
  guard = null;
  const hadFocus = formRow.contains(document.activeElement);
  formRow.remove();
  const row = rows.get(pid);
  if (row) {
    row.classList.remove('guarding');
    setAttr(row.parts.guardBtn, 'aria-expanded', 'false');
    if (hadFocus && !silent && !row.parts.guardBtn.disabled) row.parts.guardBtn.focus();
  }
}

/** Fills in defaults once settings arrive, unless the user already typed something. */
export function applyGuardDefaults(defaults) {
  if (!guard) return;
  if (!guard.budget.input.value) guard.budget.input.value = defaults.budget ?? '';
  if (!guard.killFree.input.value) guard.killFree.input.value = defaults.killFree ?? '';
}
