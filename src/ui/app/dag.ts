import dagre from '@dagrejs/dagre';
import { svg } from './dom.js';

export interface DagNode {
  id: string;
  title: string;
  subtitle: string;
  state?: string;
  /** A wait on the task: shown on the node with whether it resolved. */
  wait?: string | null;
}

export interface DagEdge {
  from: string;
  to: string;
  /** done, blocked or failed: how far the dep got. */
  kind?: string;
}

interface Layout {
  width: number;
  height: number;
  nodes: Map<string, { x: number; y: number }>;
  edges: Map<string, { x: number; y: number }[]>;
}

const NODE_W = 180;
const NODE_H = 58;
/** Layouts by definition version and shape: computed once, then only colours change. */
const layouts = new Map<string, Layout>();

function layout(key: string, nodes: readonly DagNode[], edges: readonly DagEdge[]): Layout {
  const cached = layouts.get(key);
  if (cached) return cached;
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'LR', nodesep: 18, ranksep: 56, marginx: 24, marginy: 24 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of nodes) g.setNode(n.id, { width: NODE_W, height: NODE_H });
  for (const e of edges) if (g.hasNode(e.from) && g.hasNode(e.to)) g.setEdge(e.from, e.to);
  dagre.layout(g);
  const out: Layout = { width: g.graph().width ?? 0, height: g.graph().height ?? 0, nodes: new Map(), edges: new Map() };
  for (const id of g.nodes()) {
    const n = g.node(id);
    out.nodes.set(id, { x: n.x - NODE_W / 2, y: n.y - NODE_H / 2 });
  }
  for (const e of g.edges()) out.edges.set(`${e.v}\u0000${e.w}`, g.edge(e).points ?? []);
  layouts.set(key, out);
  return out;
}

/** The shape of a graph, for the layout cache: node ids and edges. */
export function shapeKey(version: string, nodes: readonly DagNode[], edges: readonly DagEdge[]): string {
  let hash = 0;
  const text = `${nodes.map((n) => n.id).join('\u0001')}\u0002${edges.map((e) => `${e.from}>${e.to}`).join('\u0001')}`;
  for (let i = 0; i < text.length; i++) hash = (Math.imul(hash, 31) + text.charCodeAt(i)) | 0;
  return `${version}:${nodes.length}:${edges.length}:${hash}`;
}

/**
 * The DAG as SVG, laid out by dagre: one box per task (data-state), one path per dep, with pan (drag),
 * zoom (wheel) and fit. Live updates change states and labels in place, without a new layout.
 */
export class DagView {
  readonly element: SVGSVGElement;
  private readonly viewport: SVGGElement;
  private readonly boxes = new Map<string, SVGGElement>();
  private readonly paths = new Map<string, SVGPathElement>();
  private key = '';
  private size = { width: 0, height: 0 };
  private view = { x: 0, y: 0, k: 1 };
  private selected?: string;

  constructor(private readonly onSelect: (id: string) => void) {
    this.element = svg('svg', { class: 'dag', role: 'img', 'aria-label': 'workflow graph' }) as SVGSVGElement;
    this.element.append(
      svg(
        'defs',
        {},
        svg(
          'marker',
          { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
          svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrow' }),
        ),
      ),
    );
    this.viewport = svg('g', { class: 'viewport' }) as SVGGElement;
    this.element.append(this.viewport);
    this.panAndZoom();
    // until the user pans or zooms, the graph stays fitted to its box as that changes size
    new ResizeObserver(() => !this.moved && this.key && this.fit()).observe(this.element);
  }

  private moved = false;

  /** Draws the graph; the layout is reused while the shape is the same. */
  render(version: string, nodes: readonly DagNode[], edges: readonly DagEdge[]): void {
    const key = shapeKey(version, nodes, edges);
    if (key !== this.key) {
      this.key = key;
      const l = layout(key, nodes, edges);
      this.size = { width: l.width, height: l.height };
      while (this.viewport.firstChild) this.viewport.firstChild.remove();
      this.boxes.clear();
      this.paths.clear();
      const edgeLayer = svg('g', { class: 'edges' });
      const nodeLayer = svg('g', { class: 'nodes' });
      this.viewport.append(edgeLayer, nodeLayer);
      for (const e of edges) {
        const points = l.edges.get(`${e.from}\u0000${e.to}`);
        if (!points || points.length === 0) continue;
        const d = `M ${points.map((p) => `${p.x.toFixed(1)} ${p.y.toFixed(1)}`).join(' L ')}`;
        const path = svg('path', { d, class: 'edge', 'marker-end': 'url(#arrow)', 'data-from': e.from, 'data-to': e.to }) as SVGPathElement;
        edgeLayer.append(path);
        this.paths.set(`${e.from}\u0000${e.to}`, path);
      }
      for (const n of nodes) {
        const at = l.nodes.get(n.id)!;
        const box = svg(
          'g',
          { class: 'node', transform: `translate(${at.x.toFixed(1)} ${at.y.toFixed(1)})`, 'data-task': n.id, tabindex: 0 },
          svg('rect', { width: NODE_W, height: NODE_H, rx: 8 }),
          svg('text', { x: 10, y: 20, class: 'title' }),
          svg('text', { x: 10, y: 37, class: 'subtitle' }),
          svg('text', { x: 10, y: 52, class: 'waitnote' }),
        ) as SVGGElement;
        box.addEventListener('click', () => this.onSelect(n.id));
        box.addEventListener('keydown', (ev) => (ev as KeyboardEvent).key === 'Enter' && this.onSelect(n.id));
        nodeLayer.append(box);
        this.boxes.set(n.id, box);
      }
      this.fit();
    }
    for (const n of nodes) {
      const box = this.boxes.get(n.id);
      if (!box) continue;
      if (box.dataset.state !== n.state) box.setAttribute('data-state', n.state ?? 'template');
      setText(box.children[1], clip(n.title, 24));
      setText(box.children[2], clip(n.subtitle, 30));
      setText(box.children[3], n.wait ?? '');
      box.classList.toggle('selected', n.id === this.selected);
    }
    for (const e of edges) {
      const path = this.paths.get(`${e.from}\u0000${e.to}`);
      if (path && e.kind) path.setAttribute('class', `edge edge-${e.kind}`);
    }
  }

  select(id: string | undefined): void {
    this.selected = id;
    for (const [name, box] of this.boxes) box.classList.toggle('selected', name === id);
  }

  fit(): void {
    const rect = this.element.getBoundingClientRect();
    const w = rect.width || 800;
    const h = rect.height || 500;
    const k = Math.min(1.5, Math.max(0.05, Math.min(w / Math.max(1, this.size.width), h / Math.max(1, this.size.height))));
    this.view = { k, x: (w - this.size.width * k) / 2, y: (h - this.size.height * k) / 2 };
    this.apply();
  }

  zoom(factor: number, cx?: number, cy?: number): void {
    const rect = this.element.getBoundingClientRect();
    const x = cx ?? rect.width / 2;
    const y = cy ?? rect.height / 2;
    const k = Math.min(4, Math.max(0.03, this.view.k * factor));
    this.view = { k, x: x - ((x - this.view.x) * k) / this.view.k, y: y - ((y - this.view.y) * k) / this.view.k };
    this.apply();
  }

  private apply(): void {
    this.viewport.setAttribute('transform', `translate(${this.view.x.toFixed(1)} ${this.view.y.toFixed(1)}) scale(${this.view.k.toFixed(4)})`);
  }

  private panAndZoom(): void {
    let drag: { x: number; y: number; vx: number; vy: number } | undefined;
    this.element.addEventListener('pointerdown', (e) => {
      if ((e.target as Element).closest('.node')) return;
      drag = { x: e.clientX, y: e.clientY, vx: this.view.x, vy: this.view.y };
      this.moved = true;
      this.element.setPointerCapture(e.pointerId);
    });
    this.element.addEventListener('pointermove', (e) => {
      if (!drag) return;
      this.view = { ...this.view, x: drag.vx + e.clientX - drag.x, y: drag.vy + e.clientY - drag.y };
      this.apply();
    });
    this.element.addEventListener('pointerup', () => (drag = undefined));
    this.element.addEventListener(
      'wheel',
      (e) => {
        e.preventDefault();
        this.moved = true;
        const rect = this.element.getBoundingClientRect();
        this.zoom(e.deltaY < 0 ? 1.15 : 1 / 1.15, e.clientX - rect.left, e.clientY - rect.top);
      },
      { passive: false },
    );
  }
}

function setText(el: Element | undefined, text: string): void {
  if (el && el.textContent !== text) el.textContent = text;
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
