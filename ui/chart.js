// The history chart (SVG drawn by Rust with plotters) and its window tabs, which come from
// the config; the chosen window is remembered in localStorage.

import * as api from './api.js';
import { el, setText } from './dom.js';
import { formatWindow } from './format.js';
import { refreshStatus } from './header.js';
import { config, state, $, failed, succeeded } from './state.js';

const WINDOW_KEY = 'headroom.chartWindow';

/** The saved window if the config still has it, else the config's first. */
export function loadWindow() {
  try {
    const saved = Number(window.localStorage.getItem(WINDOW_KEY));
    if (config.windows.includes(saved)) return saved;
  } catch { /* storage unavailable */ }
  return config.windows[0];
}

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

export async function refreshChart() {
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

export function selectWindow(seconds) {
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

/** One tab per window of the config. */
export function buildTabs() {
  const tabs = config.windows.map((seconds) => el('button', {
    class: 'tab', type: 'button', text: formatWindow(seconds),
    dataset: { window: String(seconds) }, attrs: { role: 'tab', 'aria-selected': 'false' },
  }));
  $('chart-tabs').replaceChildren(...tabs);
}

export function bindTabs() {
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
