// Headroom popover: wiring and the refresh loop. The parts: state.js (shared state, failure
// toasts), header.js, chart.js (chart and window tabs), lists.js (Jobs and Processes: refresh
// and buttons, drawn by jobs.js, recent.js and processes.js), settings.js; api.js is the only
// way to Rust.
//
// Refresh: every `tick` event (0.5 s, sent only while the popover is visible) updates the
// header; the chart, jobs and process list refresh at most every 2 s, driven by ticks and by
// a 1 s heartbeat (which also polls the status when no tick came for 2 s). Ticks report the
// swap change over the tick's window, so with the other tabs the change comes from get_status,
// asked with each 2 s refresh. When the document is hidden every timer stops and ticks are
// ignored; when it shows again everything refreshes at once. User actions (tab, search, watch, guard) refresh what they change right away.

import * as api from './api.js';
import { config, darkQuery, state, $, failed, succeeded } from './state.js';
import { renderStatus, refreshStatus } from './header.js';
import { loadWindow, refreshChart, selectWindow, buildTabs, bindTabs } from './chart.js';
import {
  refreshJobs, refreshProcesses, onWatch, onGuard, guardDefaults,
} from './lists.js';
import { initProcesses, applyGuardDefaults } from './processes.js';
import { initSettings, loadSettings } from './settings.js';
import { refreshFits } from './fits.js';

const SLOW_REFRESH_MS = 2000;
const HEARTBEAT_MS = 1000;
const SEARCH_DEBOUNCE_MS = 150;

function onTick(payload) {
  if (!state.visible) return;
  state.lastTickAt = Date.now();
  const ours = state.windowSeconds === config.tickWindow;
  if (ours) ++state.seq.status; // newer than any status request in flight
  renderStatus(payload, { withChange: ours });
  succeeded('status');
  refreshFits();
  maybeRefreshSlow();
}

// ---- Refresh loop and visibility ----------------------------------------------------------

function refreshSlow() {
  state.lastSlowAt = Date.now();
  state.slowInFlight = true;
  const work = [refreshChart(), refreshJobs().then(refreshProcesses), refreshFits()];
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
      config.defaults = c.defaults;
      // Every form field named like a default shows it as its placeholder.
      for (const [name, value] of Object.entries(c.defaults)) {
        for (const input of document.querySelectorAll(`input[name="${name}"]`)) input.placeholder = value;
      }
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
  initProcesses({ onWatch, onGuard, guardDefaults, fitOf: (proc, key) => api.getFitOf(proc.command, key) });
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
