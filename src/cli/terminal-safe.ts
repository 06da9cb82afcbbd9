import { printable } from '../compiler/diagnostics.js';

/**
 * braid's own terminal sequences: its colours (format/text.ts: reset, bold, dim, red, yellow, cyan), and erasing
 * the line of a progress display. Others (cursor moves, clearing, concealed text, window titles) never pass.
 */
const OWN = /\x1b\[(?:0|1|2|31|33|36)m|\r\x1b\[K/g;

/**
 * Text as it may reach a terminal: control bytes that came with data (a name, a payload, a handler's error
 * message) are shown escaped, so none can move the cursor, clear the screen or retitle the window; line
 * breaks, tabs and braid's own colours and progress line pass.
 */
export function terminalSafe(text: string): string {
  let out = '';
  let last = 0;
  for (const m of text.matchAll(OWN)) {
    out += plain(text.slice(last, m.index)) + m[0];
    last = m.index + m[0].length;
  }
  return out + plain(text.slice(last));
}

const plain = (text: string) =>
  text === ''
    ? text
    : text
        .split('\n')
        .map((line) => printable(line, { keepTabs: true }))
        .join('\n');
