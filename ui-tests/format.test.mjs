// Unit checks of ui/format.js (pure functions): node ui-tests/format.test.mjs
import assert from 'node:assert/strict';
import {
  formatBytes, formatSignedBytes, formatPercentNumber, formatWindow, pressureWord,
  budgetUse, fieldError, errorText,
} from '../ui/format.js';

const GB = 2 ** 30;
const MB = 2 ** 20;

assert.equal(formatBytes(3.1 * GB), '3.1 GiB');
assert.equal(formatBytes(812 * MB), '812 MiB');
assert.equal(formatBytes(48 * GB), '48.0 GiB');
assert.equal(formatBytes(48 * GB, { trim: true }), '48 GiB');
assert.equal(formatBytes(128 * GB), '128 GiB');
assert.equal(formatBytes(999 * MB), '999 MiB');
assert.equal(formatBytes(1000 * MB), '1.0 GiB');
assert.equal(formatBytes(1023.9 * MB), '1.0 GiB');
assert.equal(formatBytes(4.2 * MB), '4 MiB');
assert.equal(formatBytes(300 * 1024), '300 KiB');
assert.equal(formatBytes(0), '0 MiB');
assert.equal(formatBytes(null), '–');
assert.equal(formatBytes(NaN), '–');
assert.equal(formatSignedBytes(1.2 * GB), '+1.2 GiB');
assert.equal(formatSignedBytes(-640 * MB), '-640 MiB');
assert.equal(formatSignedBytes(0), '+0 MiB');
assert.equal(formatSignedBytes(9.6 * GB), '+9.6 GiB');
assert.equal(formatPercentNumber(38.4), '38');
assert.equal(formatPercentNumber(101), '100');
assert.equal(formatWindow(600), '10 min');
assert.equal(formatWindow(3600), '1 h');
assert.equal(formatWindow(86400), '24 h');
assert.equal(pressureWord('warn'), 'Warning');
assert.equal(pressureWord(null), 'Pressure n/a');
assert.deepEqual(budgetUse(7.1 * GB, 8 * GB).level, 'warn');
assert.deepEqual(budgetUse(7.5 * GB, 8 * GB).level, 'over');
assert.deepEqual(budgetUse(9.6 * GB, 8 * GB).fraction, 1);
assert.equal(budgetUse(1, null), null);

assert.deepEqual(fieldError({ field: 'swap_budget', message: "invalid size 'x'", text: "swap budget: invalid size 'x'" }),
  { field: 'swap_budget', message: "invalid size 'x'" });
assert.deepEqual(fieldError({ field: null, message: 'pid 42 is gone', text: 'pid 42 is gone' }),
  { field: null, message: 'pid 42 is gone' });
assert.deepEqual(fieldError('invalid args `id`'), { field: null, message: 'invalid args `id`' });
assert.equal(errorText({ field: 'kill_free', message: 'bad', text: 'kill free: bad' }), 'kill free: bad');
assert.equal(errorText(new Error('boom')), 'boom');
assert.equal(errorText({ message: 'obj' }), 'obj');
assert.equal(errorText(undefined), 'unknown error');
console.log('format.js: all passed');
