// A minimal Chrome DevTools Protocol client for the page checks (no npm packages):
// starts headless chromium, opens one page, evaluates JS in it, clicks and types.
// Node 20 needs --experimental-websocket (Node 22+ has WebSocket built in).

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function launch({ chrome = process.env.CHROMIUM || '/usr/bin/chromium', width = 380, height = 560, dark = false } = {}) {
  const profile = mkdtempSync(join(tmpdir(), 'headroom-ui-'));
  const args = [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run', '--hide-scrollbars',
    `--user-data-dir=${profile}`, `--window-size=${width},${height}`,
    '--remote-debugging-port=0', 'about:blank',
  ];
  if (dark) args.unshift('--force-dark-mode', '--blink-settings=preferredColorScheme=0');
  const proc = spawn(chrome, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const wsUrl = await new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error('chromium did not start')), 15000);
    proc.stderr.on('data', (d) => {
      buf += d;
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(buf);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    proc.on('exit', (code) => reject(new Error(`chromium exited ${code}: ${buf}`)));
  });
  const port = new URL(wsUrl).port;
  let pageWs;
  for (let i = 0; i < 50 && !pageWs; i++) {
    const list = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
    pageWs = list.find((t) => t.type === 'page')?.webSocketDebuggerUrl;
    if (!pageWs) await sleep(100);
  }
  const ws = new WebSocket(pageWs);
  await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = reject; });
  let nextId = 1;
  const pending = new Map();
  const listeners = [];
  ws.onmessage = (msg) => {
    const data = JSON.parse(msg.data);
    if (data.id && pending.has(data.id)) {
      const { resolve, reject } = pending.get(data.id);
      pending.delete(data.id);
      if (data.error) reject(new Error(`${data.error.message} ${data.error.data || ''}`));
      else resolve(data.result);
    } else if (data.method) {
      for (const l of listeners) l(data);
    }
  };
  const send = (method, params = {}) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    ws.send(JSON.stringify({ id, method, params }));
  });

  const page = {
    send,
    logs: [],
    async goto(url) {
      await send('Page.enable');
      await send('Runtime.enable');
      await send('Log.enable');
      const loaded = new Promise((r) => {
        const l = (m) => { if (m.method === 'Page.loadEventFired') { listeners.splice(listeners.indexOf(l), 1); r(); } };
        listeners.push(l);
      });
      await send('Page.navigate', { url });
      await loaded;
    },
    /** Evaluates an expression (or a function's source with args) and returns its value. */
    async eval(fn, ...args) {
      const expression = typeof fn === 'function' ? `(${fn})(...${JSON.stringify(args)})` : fn;
      const res = await send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true });
      if (res.exceptionDetails) {
        throw new Error(`page: ${res.exceptionDetails.exception?.description || res.exceptionDetails.text}`);
      }
      return res.result.value;
    },
    async waitFor(fn, { timeout = 3000, args = [] } = {}) {
      const end = Date.now() + timeout;
      for (;;) {
        const v = await page.eval(fn, ...args);
        if (v) return v;
        if (Date.now() > end) throw new Error(`timed out waiting for ${String(fn).slice(0, 120)}`);
        await sleep(25);
      }
    },
    /** A real mouse click at the centre of the element (after scrolling it into view). */
    async click(selector) {
      const box = await page.eval((sel) => {
        const n = document.querySelector(sel);
        if (!n) return null;
        n.scrollIntoView({ block: 'center' });
        const r = n.getBoundingClientRect();
        return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
      }, selector);
      if (!box) throw new Error(`click: no ${selector}`);
      for (const type of ['mouseMoved', 'mousePressed', 'mouseReleased']) {
        await send('Input.dispatchMouseEvent', { type, x: box.x, y: box.y, button: 'left', clickCount: 1 });
      }
    },
    /** Focuses the input, selects its text and types `text` (replacing it). */
    async type(selector, text) {
      await page.eval((sel) => { const n = document.querySelector(sel); n.focus(); n.select(); }, selector);
      await send('Input.insertText', { text });
    },
    async key(key) {
      const codes = { Enter: 13, Escape: 27, Tab: 9 };
      for (const type of ['keyDown', 'keyUp']) {
        await send('Input.dispatchKeyEvent', { type, key, code: key, windowsVirtualKeyCode: codes[key] || 0, text: key === 'Enter' ? '\r' : undefined });
      }
    },
    async close() {
      try { ws.close(); } catch { /* ignore */ }
      // Chromium writes its profile until it has exited: wait for that before removing it
      // (a removal racing its last writes failed with ENOTEMPTY).
      const gone = () => proc.exitCode !== null || proc.signalCode !== null;
      const exited = new Promise((resolve) => { if (gone()) resolve(); else proc.once('exit', resolve); });
      proc.kill('SIGTERM');
      await Promise.race([exited, sleep(5000)]);
      if (!gone()) {
        proc.kill('SIGKILL');
        await Promise.race([exited, sleep(2000)]);
      }
      // Its helpers (zygote, crashpad) may still write for a moment: retry, then leave the
      // temporary profile behind with a word rather than fail a check that passed.
      for (let tries = 0; ; tries++) {
        try {
          rmSync(profile, { recursive: true, force: true });
          break;
        } catch (error) {
          if (tries >= 20) {
            console.warn(`cdp: left ${profile}: ${error.message}`);
            break;
          }
          await sleep(100);
        }
      }
    },
  };
  listeners.push((m) => {
    if (m.method === 'Runtime.consoleAPICalled') page.logs.push(`${m.params.type}: ${m.params.args.map((a) => a.value ?? a.description).join(' ')}`);
    if (m.method === 'Log.entryAdded') page.logs.push(`${m.params.entry.level}: ${m.params.entry.text}`);
    if (m.method === 'Runtime.exceptionThrown') page.logs.push(`exception: ${m.params.exceptionDetails.exception?.description || m.params.exceptionDetails.text}`);
  });
  return page;
}
