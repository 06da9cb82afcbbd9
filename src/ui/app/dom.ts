import { humanDuration } from '../../runtime/wire/index.js';

type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

/** Makes an element: attributes (on* are listeners; false/null/undefined are left out) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG = 'http://www.w3.org/2000/svg';

export function svg(tag: string, attrs: Attrs = {}, ...children: Child[]): SVGElement {
  const el = document.createElementNS(SVG, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el: Element, attrs: Attrs): void {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(el: Element, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

export function clear(el: Element): void {
  while (el.firstChild) el.firstChild.remove();
}

export function badge(state: string): HTMLElement {
  return h('span', { class: `badge state-${state}`, 'data-state': state }, state);
}

/** One date format throughout: ISO in UTC (to the second), with the relative time beside it. */
export function time(value: string | null | undefined): string {
  if (!value) return '—';
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return String(value);
  const ms = Date.now() - d.getTime();
  const relative = Math.abs(ms) < 1000 ? 'now' : ms > 0 ? `${humanDuration(ms, true)} ago` : `in ${humanDuration(-ms, true)}`;
  return `${d.toISOString().slice(0, 19)}Z (${relative})`;
}

/** How long from `from` to `to` (or now), humanised: 850ms, 12.3s, 4m 5s, 2h 10m, 2d. */
export function duration(from: string | null | undefined, to: string | null | undefined): string {
  if (!from) return '—';
  return humanDuration((to ? new Date(to).getTime() : Date.now()) - new Date(from).getTime());
}

export function json(value: unknown): HTMLElement {
  return h('pre', { class: 'json' }, JSON.stringify(value, null, 2));
}
