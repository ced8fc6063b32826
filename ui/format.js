// Number formatting for the popover. GB means 2^30 bytes, MB 2^20, KB 2^10.
// Pure functions, no DOM: easy to test in isolation.

const KB = 1024;
const MB = 1024 * KB;
const GB = 1024 * MB;

function isNum(v) {
  return typeof v === 'number' && Number.isFinite(v);
}

/**
 * A size as people read it: "3.1 GB", "812 MB", "64 KB", "0 MB".
 * GB get one decimal below 100 ("48.0 GB"), none from 100 on ("128 GB");
 * with `trim`, a whole number drops its ".0" ("48 GB"), for totals and budgets.
 * Values round to the next unit at 1000 (1000 MB shows as "1.0 GB").
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
    return `${sign}${text} GB`;
  }
  if (abs >= 1000 * KB) {
    const mb = Math.round(abs / MB);
    return mb >= 1000 ? `${sign}1.0 GB` : `${sign}${mb} MB`;
  }
  if (abs === 0) return '0 MB';
  const kb = Math.max(1, Math.round(abs / KB));
  return kb >= 1000 ? `${sign}1 MB` : `${sign}${kb} KB`;
}

/** A change: "+1.2 GB", "-640 MB", "+0 MB". */
export function formatSignedBytes(bytes) {
  if (!isNum(bytes)) return '–';
  if (bytes === 0) return '+0 MB';
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
 * Which form field a rejected command names: the error string starts with the field's
 * name and a colon ("swap budget: invalid size 'x': …"). `fields` maps a field key to its
 * accepted names (lowercase, spaces); underscores and dashes in the error count as spaces.
 * Returns { field, message } where message is the text after the name (or the whole
 * string when no field matched, with field null).
 */
export function matchFieldError(error, fields) {
  const raw = errorText(error);
  const norm = raw.trim().toLowerCase().replace(/[_-]/g, ' ');
  // Longest names first, so "default swap budget" wins over "swap budget".
  const names = [];
  for (const [field, aliases] of Object.entries(fields)) {
    for (const alias of aliases) names.push({ field, alias: alias.toLowerCase() });
  }
  names.sort((a, b) => b.alias.length - a.alias.length);
  for (const { field, alias } of names) {
    if (norm.startsWith(alias + ':')) {
      const rest = raw.trim().slice(alias.length + 1).trim();
      return { field, message: rest || raw.trim() };
    }
  }
  // A wrapped error ("guard: swap budget: …") still names its field.
  for (const { field, alias } of names) {
    const at = norm.indexOf(alias + ':');
    if (at > 0 && /[\s:]/.test(norm[at - 1])) {
      const rest = raw.trim().slice(at + alias.length + 1).trim();
      return { field, message: rest || raw.trim() };
    }
  }
  return { field: null, message: raw.trim() };
}

/** The text of whatever a rejected invoke gave us (usually a string). */
export function errorText(error) {
  if (error == null) return 'unknown error';
  if (typeof error === 'string') return error;
  if (error instanceof Error) return error.message;
  if (typeof error === 'object' && typeof error.message === 'string') return error.message;
  try {
    return JSON.stringify(error);
  } catch {
    return String(error);
  }
}
