// Number formatting for the popover. GiB means 2^30 bytes, MiB 2^20, KiB 2^10, and say so.
// Pure functions, no DOM: easy to test in isolation.

const KB = 1024;
const MB = 1024 * KB;
const GB = 1024 * MB;

function isNum(v) {
  return typeof v === 'number' && Number.isFinite(v);
}

/**
 * A size as people read it: "3.1 GiB", "812 MiB", "64 KiB", "0 MiB".
 * GiB get one decimal below 100 ("48.0 GiB"), none from 100 on ("128 GiB");
 * with `trim`, a whole number drops its ".0" ("48 GiB"), for totals and budgets.
 * Values round to the next unit at 1000 (1000 MiB shows as "1.0 GiB").
 * null/undefined/NaN give "–".
 */
export function formatBytes(bytes, { trim = false } = {}) {
  if (!isNum(bytes)) return '–';
  const abs = Math.abs(bytes);
  const sign = bytes < 0 ? '-' : '';
  if (abs >= 1000 * MB) {
    const gb = abs / GB;
    let text = gb >= 99.95 ? String(Math.round(gb)) : gb.toFixed(1);
    if (trim && text.endsWith('.0')) text = text.slice(0, -2);
    return `${sign}${text} GiB`;
  }
  if (abs >= 1000 * KB) {
    const mb = Math.round(abs / MB);
    return mb >= 1000 ? `${sign}1.0 GiB` : `${sign}${mb} MiB`;
  }
  if (abs === 0) return '0 MiB';
  const kb = Math.max(1, Math.round(abs / KB));
  return kb >= 1000 ? `${sign}1 MiB` : `${sign}${kb} KiB`;
}

/** A change: "+1.2 GiB", "-640 MiB", "+0 MiB". */
export function formatSignedBytes(bytes) {
  if (!isNum(bytes)) return '–';
  if (bytes === 0) return '+0 MiB';
  const text = formatBytes(Math.abs(bytes));
  return (bytes < 0 ? '-' : '+') + text;
}

/** A percentage without decimals: 38.4 → "38". */
export function formatPercentNumber(percent) {
  if (!isNum(percent)) return '–';
  return String(Math.round(Math.min(100, Math.max(0, percent))));
}

/** The chart window as a label: 600 → "10 min", 3600 → "1 h", 86400 → "24 h". */
export function formatWindow(seconds) {
  if (!isNum(seconds) || seconds <= 0) return '';
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

/** Pressure level to the word shown next to free %. */
export function pressureWord(level) {
  switch (level) {
    case 'normal': return 'Normal';
    case 'warn': return 'Warning';
    case 'critical': return 'Critical';
    default: return 'Pressure n/a';
  }
}

/** A job's state as shown in its row. */
export function stateWord(state) {
  switch (state) {
    case 'running': return 'running';
    case 'paused': return 'paused';
    case 'stopping': return 'stopping…';
    case 'stopped': return 'stopped';
    case 'finished': return 'finished';
    default: return String(state ?? '');
  }
}

/** A job's mode as its badge says it. */
export function modeWord(mode) {
  switch (mode) {
    case 'watch': return 'watch';
    case 'guard': return 'guard';
    case 'external': return 'terminal';
    default: return String(mode ?? '');
  }
}

/**
 * How full a guard's budget is, 0..1 (clamped), and a level for its color:
 * "ok" below 60 %, "warn" below 90 %, "over" from 90 %.
 */
export function budgetUse(growthBytes, budgetBytes) {
  if (!isNum(budgetBytes) || budgetBytes <= 0) return null;
  const ratio = Math.max(0, isNum(growthBytes) ? growthBytes : 0) / budgetBytes;
  const level = ratio >= 0.9 ? 'over' : ratio >= 0.6 ? 'warn' : 'ok';
  return { fraction: Math.min(1, ratio), ratio, level };
}

/**
 * A rejected command's error, typed by Rust ({ field, message, text }): the form field at
 * fault (a settings key, or `swap_budget`, `kill_free`, `on_budget`) or null, and the message
 * without the field's name. Anything else (a Tauri error string) has no field.
 */
export function fieldError(error) {
  if (error && typeof error === 'object' && typeof error.message === 'string' && 'field' in error) {
    return { field: error.field ?? null, message: error.message };
  }
  return { field: null, message: errorText(error) };
}

/** The text of whatever a rejected invoke gave us: a command error's `text`, or a string. */
export function errorText(error) {
  if (error == null) return 'unknown error';
  if (typeof error === 'string') return error;
  if (error instanceof Error) return error.message;
  if (typeof error === 'object' && typeof error.text === 'string') return error.text;
  if (typeof error === 'object' && typeof error.message === 'string') return error.message;
  try {
    return JSON.stringify(error);
  } catch {
    return String(error);
  }
}
