// Headroom popover: wiring, refresh loop and the header.
//
// Refresh: every `tick` event (0.5 s, sent only while the popover is visible) updates the
// header; the chart, jobs and process list refresh at most every 2 s, driven by ticks and by
// a 1 s heartbeat (which also polls the status when no tick came for 2 s). Ticks report the
// swap change over 10 min, so with the 1 h / 24 h tab the change comes from get_status, asked
// with each 2 s refresh. When the document
// is hidden every timer stops and ticks are ignored; when it shows again everything refreshes
// at once. User actions (tab, search, watch, guard) refresh what they change right away.

import * as api from './api.js';
import { el, setText, setAttr } from './dom.js';
import {
  formatBytes, formatSignedBytes, formatPercentNumber, formatWindow, pressureWord, errorText,
} from './format.js';
import { toast, clearToast } from './toast.js';
import { renderJobs, trackedPids } from './jobs.js';
import { renderRecent } from './recent.js';
import { initProcesses, renderProcesses, applyGuardDefaults } from './processes.js';
import { initSettings, loadSettings, currentSettings } from './settings.js';

const SLOW_REFRESH_MS = 2000;
const HEARTBEAT_MS = 1000;
const SEARCH_DEBOUNCE_MS = 150;
// From Rust (get_config): the chart windows, and the one ticks carry the swap change over;
// for the other windows the change comes from get_status({ windowSeconds }), asked with each
// 2 s refresh.
const config = { windows: [], tickWindow: null };
const WINDOW_KEY = 'headroom.chartWindow';

const darkQuery = window.matchMedia('(prefers-color-scheme: dark)');

const state = {
  windowSeconds: null, // set from the config at start
  dark: darkQuery.matches,
  query: '',
  jobs: [],
  visible: !document.hidden,
  lastTickAt: 0,
  lastPollAt: 0, // last get_status asked by the heartbeat (only when ticks stop)
  lastSlowAt: 0,
  slowInFlight: false,
  heartbeat: 0,
  searchTimer: 0,
  seq: { status: 0, chart: 0, jobs: 0, processes: 0 },
  failing: new Set(), // what is currently failing, so a failure is reported once
  chartLoaded: false,
  chartSvg: '', // the markup shown, to skip identical redraws
  swapChange: null, // swap change over the selected window, bytes
};

const $ = (id) => document.getElementById(id);

function loadWindow() {
  try {
    const saved = Number(window.localStorage.getItem(WINDOW_KEY));
    if (config.windows.includes(saved)) return saved;
  } catch { /* storage unavailable */ }
  return config.windows[0];
}

// ---- Errors -------------------------------------------------------------------------------

const LABELS = {
  status: 'Couldn\u2019t read memory status',
  chart: 'Couldn\u2019t draw the chart',
  jobs: 'Couldn\u2019t load jobs',
  processes: 'Couldn\u2019t load processes',
  settings: 'Couldn\u2019t load settings',
  events: 'Live updates unavailable',
  config: 'Couldn\u2019t load the popover\u2019s settings from Headroom',
};

/** Reports a failing refresh once (until it succeeds again): a small toast, nothing modal. */
function failed(what, error) {
  if (state.failing.has(what)) return;
  state.failing.add(what);
  toast(`${LABELS[what] || what}: ${errorText(error)}`, { key: `fail:${what}` });
}

function succeeded(what) {
  if (state.failing.delete(what)) clearToast(`fail:${what}`);
}

// ---- Header -------------------------------------------------------------------------------

/** `withChange`: false keeps the swap change shown (a tick for another window than ours). */
function renderStatus(s, { withChange = true } = {}) {
  if (!s || typeof s !== 'object') return;
  const free = formatPercentNumber(s.free_percent);
  const freeEl = $('free-percent');
  const unit = document.createElement('span');
  unit.className = 'unit';
  unit.textContent = '%';
  if (freeEl.textContent !== `${free}%`) freeEl.replaceChildren(free, unit);
  setText($('total-memory'), `of ${formatBytes(s.total_bytes, { trim: true })} total`);

  const used = Number.isFinite(s.free_percent) ? Math.min(100, Math.max(0, 100 - s.free_percent)) : 0;
  $('used-meter').style.width = `${used.toFixed(1)}%`;

  const level = ['normal', 'warn', 'critical'].includes(s.pressure) ? s.pressure : 'unknown';
  const pressure = $('pressure');
  pressure.dataset.level = level;
  $('status').dataset.level = level;
  setText($('pressure-text'), pressureWord(s.pressure));
  setAttr(pressure, 'title', level === 'unknown'
    ? 'Memory pressure is not available on this system'
    : `Memory pressure: ${pressureWord(s.pressure).toLowerCase()}`);

  setText($('swap-used'), formatBytes(s.swap_used_bytes));
  setAttr($('swap-used'), 'title', Number.isFinite(s.swap_total_bytes)
    ? `${formatBytes(s.swap_used_bytes)} of ${formatBytes(s.swap_total_bytes)} swap in use` : null);
  const change = $('swap-change');
  const growing = !!s.swap_growing;
  if (withChange) state.swapChange = s.swap_change_bytes;
  setText(change, `${growing ? '↑ ' : ''}${formatSignedBytes(state.swapChange)}`);
  change.dataset.growing = String(growing);
  setAttr(change, 'title', growing ? 'Swap is growing' : null);
  setText($('swap-change-window'), formatWindow(state.windowSeconds));

  const compressed = $('compressed');
  compressed.closest('.stat').hidden = s.compressed_bytes == null;
  setText(compressed, formatBytes(s.compressed_bytes));
  $('status').classList.remove('stale');
}

async function refreshStatus() {
  const seq = ++state.seq.status;
  try {
    const status = await api.getStatus(state.windowSeconds);
    if (seq !== state.seq.status) return;
    renderStatus(status);
    succeeded('status');
  } catch (error) {
    if (seq !== state.seq.status) return;
    $('status').classList.add('stale');
    failed('status', error);
  }
}

function onTick(payload) {
  if (!state.visible) return;
  state.lastTickAt = Date.now();
  const ours = state.windowSeconds === config.tickWindow;
  if (ours) ++state.seq.status; // newer than any status request in flight
  renderStatus(payload, { withChange: ours });
  succeeded('status');
  maybeRefreshSlow();
}

// ---- Chart --------------------------------------------------------------------------------

function fitSvg(container) {
  const svg = container.querySelector('svg');
  if (!svg) return;
  if (!svg.hasAttribute('viewBox')) {
    const w = parseFloat(svg.getAttribute('width'));
    const h = parseFloat(svg.getAttribute('height'));
    if (w > 0 && h > 0) svg.setAttribute('viewBox', `0 0 ${w} ${h}`);
  }
  svg.removeAttribute('width');
  svg.removeAttribute('height');
  svg.setAttribute('preserveAspectRatio', 'xMidYMid meet');
}

async function refreshChart() {
  const seq = ++state.seq.chart;
  const chart = $('chart');
  chart.setAttribute('aria-busy', 'true');
  try {
    const svg = await api.getChart(state.windowSeconds, state.dark);
    if (seq !== state.seq.chart) return;
    if (typeof svg !== 'string' || !/^\s*(<\?xml[^>]*>\s*)?<svg[\s>]/i.test(svg)) {
      throw new Error('the chart is not SVG markup');
    }
    // The only HTML the page injects: SVG rendered by Rust (plotters), which escapes its text
    // (stage names are the job's own words; core's chart tests check the escaping).
    if (svg !== state.chartSvg || chart.dataset.state !== 'ok') {
      chart.innerHTML = svg;
      fitSvg(chart);
      state.chartSvg = svg;
    }
    chart.dataset.state = 'ok';
    state.chartLoaded = true;
    succeeded('chart');
  } catch (error) {
    if (seq !== state.seq.chart) return;
    if (!state.chartLoaded) {
      chart.dataset.state = 'error';
      chart.replaceChildren(Object.assign(document.createElement('p'), {
        className: 'chart-message', textContent: 'Chart unavailable',
      }));
    }
    failed('chart', error);
  } finally {
    if (seq === state.seq.chart) chart.removeAttribute('aria-busy');
  }
}

function selectWindow(seconds) {
  if (!config.windows.includes(seconds)) return;
  state.windowSeconds = seconds;
  try { window.localStorage.setItem(WINDOW_KEY, String(seconds)); } catch { /* ignore */ }
  for (const tab of document.querySelectorAll('.tab[data-window]')) {
    const on = Number(tab.dataset.window) === seconds;
    tab.setAttribute('aria-selected', String(on));
    tab.classList.toggle('active', on);
    tab.tabIndex = on ? 0 : -1;
  }
  setText($('swap-change-window'), formatWindow(seconds));
}

// ---- Jobs and processes -------------------------------------------------------------------

async function refreshJobs() {
  const seq = ++state.seq.jobs;
  try {
    const jobs = await api.getJobs();
    if (seq !== state.seq.jobs) return;
    state.jobs = Array.isArray(jobs) ? jobs : [];
    renderJobs(state.jobs, { onUnguard, onControl });
    succeeded('jobs');
    const recent = await api.getRecentJobs();
    if (seq !== state.seq.jobs) return;
    renderRecent(Array.isArray(recent) ? recent : []);
  } catch (error) {
    if (seq !== state.seq.jobs) return;
    failed('jobs', error);
  }
}

async function refreshProcesses() {
  const seq = ++state.seq.processes;
  const query = state.query;
  try {
    const list = await api.getProcesses(query);
    if (seq !== state.seq.processes) return;
    const rows = Array.isArray(list?.rows) ? list.rows : [];
    renderProcesses(rows, list?.total ?? rows.length, query, trackedPids(state.jobs));
    succeeded('processes');
  } catch (error) {
    if (seq !== state.seq.processes) return;
    failed('processes', error);
  }
}

function short(text, max = 48) {
  const t = String(text ?? '');
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

async function onUnguard(job, button) {
  if (!job) return;
  button.disabled = true;
  try {
    await api.unguard(job.id);
    toast(`${job.mode === 'watch' ? 'Stopped watching' : 'Stopped guarding'} ${short(job.command)}`, { kind: 'info' });
    await refreshJobs();
    await refreshProcesses();
  } catch (error) {
    toast(`Couldn\u2019t unguard: ${errorText(error)}`);
  } finally {
    button.disabled = false;
  }
}

const CONTROL_DONE = { pause: 'Paused', resume: 'Resumed', stop: 'Stopping' };

async function onControl(job, action, button) {
  if (!job) return;
  button.disabled = true;
  try {
    await api.controlJob(action, job.id);
    toast(`${CONTROL_DONE[action]} ${short(job.command)}`, { kind: 'info' });
    await refreshJobs();
  } catch (error) {
    toast(`Couldn\u2019t ${action} it: ${errorText(error)}`);
  } finally {
    button.disabled = false;
  }
}

async function onWatch(proc, button) {
  button.disabled = true;
  try {
    await api.watch(proc.pid);
    toast(`Watching ${short(proc.name)} (pid ${proc.pid})`, { kind: 'info' });
    await refreshJobs();
    await refreshProcesses();
  } catch (error) {
    toast(`Couldn\u2019t watch ${short(proc.name)}: ${errorText(error)}`);
    button.disabled = false;
  }
}

/** Resolves when guarded; rejects with the command's error for the form to place. */
async function onGuard(proc, budget, killFree, onBudget) {
  await api.guard(proc.pid, budget, killFree, onBudget);
  toast(`Guarding ${short(proc.name)} (pid ${proc.pid})`, { kind: 'info' });
  refreshJobs().then(refreshProcesses);
}

function guardDefaults() {
  const s = currentSettings();
  return {
    budget: s && s.default_swap_budget != null ? String(s.default_swap_budget) : '',
    killFree: s && s.default_kill_free != null ? String(s.default_kill_free) : '',
  };
}

// ---- Refresh loop and visibility ----------------------------------------------------------

function refreshSlow() {
  state.lastSlowAt = Date.now();
  state.slowInFlight = true;
  const work = [refreshChart(), refreshJobs().then(refreshProcesses)];
  if (state.windowSeconds !== config.tickWindow && Date.now() - state.lastTickAt < SLOW_REFRESH_MS) {
    work.push(refreshStatus()); // the change over 1 h / 24 h (ticks carry 10 min)
  }
  return Promise.allSettled(work)
    .finally(() => { state.slowInFlight = false; });
}

function maybeRefreshSlow() {
  if (!state.visible || state.slowInFlight) return;
  if (Date.now() - state.lastSlowAt < SLOW_REFRESH_MS) return;
  refreshSlow();
}

function heartbeat() {
  if (!state.visible) return;
  const t = Date.now();
  if (t - Math.max(state.lastTickAt, state.lastPollAt) >= SLOW_REFRESH_MS) {
    state.lastPollAt = t;
    refreshStatus();
  }
  maybeRefreshSlow();
}

function stopTimers() {
  clearInterval(state.heartbeat);
  clearTimeout(state.searchTimer);
  state.heartbeat = 0;
  state.searchTimer = 0;
}

function pause() {
  state.visible = false;
  stopTimers();
}

function resume() {
  stopTimers();
  state.visible = true;
  state.query = $('search').value;
  state.lastPollAt = Date.now();
  refreshStatus();
  refreshSlow();
  state.heartbeat = setInterval(heartbeat, HEARTBEAT_MS);
}

// ---- Wiring -------------------------------------------------------------------------------

/** One tab per window of the config. */
function buildTabs() {
  const tabs = config.windows.map((seconds) => el('button', {
    class: 'tab', type: 'button', text: formatWindow(seconds),
    dataset: { window: String(seconds) }, attrs: { role: 'tab', 'aria-selected': 'false' },
  }));
  $('chart-tabs').replaceChildren(...tabs);
}

function bindTabs() {
  const tabs = Array.from(document.querySelectorAll('.tab[data-window]'));
  for (const tab of tabs) {
    tab.addEventListener('click', () => {
      const seconds = Number(tab.dataset.window);
      if (seconds === state.windowSeconds) return;
      selectWindow(seconds);
      refreshChart();
      refreshStatus();
    });
    tab.addEventListener('keydown', (event) => {
      const i = tabs.indexOf(tab);
      const next = event.key === 'ArrowRight' ? tabs[(i + 1) % tabs.length]
        : event.key === 'ArrowLeft' ? tabs[(i + tabs.length - 1) % tabs.length] : null;
      if (next) {
        event.preventDefault();
        next.focus();
        next.click();
      }
    });
  }
}

function bindSearch() {
  const search = $('search');
  const run = () => {
    clearTimeout(state.searchTimer);
    state.searchTimer = 0;
    state.query = search.value;
    if (state.visible) refreshProcesses();
  };
  search.addEventListener('input', () => {
    clearTimeout(state.searchTimer);
    state.searchTimer = setTimeout(run, SEARCH_DEBOUNCE_MS);
  });
  search.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && search.value) {
      event.preventDefault();
      search.value = '';
      run();
    } else if (event.key === 'Enter') {
      event.preventDefault();
      run();
    }
  });
}

/** Loads the config from Rust, trying again every second until it comes. */
async function loadConfig() {
  for (;;) {
    try {
      const c = await api.getConfig();
      config.windows = c.windows_seconds;
      config.tickWindow = c.tick_window_seconds;
      succeeded('config');
      return;
    } catch (error) {
      failed('config', error);
      await new Promise((resolve) => { setTimeout(resolve, 1000); });
    }
  }
}

async function start() {
  await loadConfig();
  state.windowSeconds = loadWindow();
  buildTabs();
  selectWindow(state.windowSeconds);
  bindTabs();
  bindSearch();
  initProcesses({ onWatch, onGuard, guardDefaults });
  initSettings({
    onChange: () => applyGuardDefaults(guardDefaults()),
    onError: (error) => failed('settings', error),
  });

  darkQuery.addEventListener('change', (event) => {
    state.dark = event.matches;
    if (state.visible) refreshChart();
  });
  document.addEventListener('visibilitychange', () => {
    if (document.hidden) pause();
    else resume();
  });

  api.onTick(onTick).then(() => succeeded('events'), (error) => failed('events', error));
  loadSettings().then((s) => { if (s) succeeded('settings'); });
  if (state.visible) resume();
}

start();
