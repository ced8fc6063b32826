// The header: free memory, pressure, swap in use and its change over the chart's window.

import * as api from './api.js';
import { setText, setAttr } from './dom.js';
import {
  formatBytes, formatSignedBytes, formatPercentNumber, formatWindow, pressureWord,
} from './format.js';
import { state, $, failed, succeeded } from './state.js';

/** `withChange`: false keeps the swap change shown (a tick for another window than ours). */
export function renderStatus(s, { withChange = true } = {}) {
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

export async function refreshStatus() {
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
