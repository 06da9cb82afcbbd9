import { pathTo } from '../../api/route-table.js';
import { get } from './api.js';
import { h } from './dom.js';

interface StreamInfo {
  name: string;
  attempt: number;
  chunks: number;
}

const LOOK_AGAIN_MS = 1500;

/**
 * A task's output streams, live: each one followed over server-sent events (the browser's EventSource resumes
 * after a dropped connection with Last-Event-ID, so nothing is shown twice), each chunk apart (shaded in turn, so
 * where one ends shows while text chunks still read as one text), others a line each. Kept across the panel's
 * re-renders of the same task; a running task without streams yet is looked at again until one appears.
 */
export class StreamsView {
  readonly el = h('div', { class: 'streams', 'data-testid': 'task-streams' });
  private readonly sources = new Map<string, EventSource>();
  private timer?: number;
  private disposed = false;

  constructor(
    readonly workflowId: string,
    readonly task: string,
  ) {
    void this.look();
  }

  /** Looks for streams again while the task may still write one (the panel calls it with each status). */
  taskState(state: string): void {
    const open = state === 'running' || state === 'pending' || state === 'available' || state === 'scheduled' || state === 'retryable';
    window.clearTimeout(this.timer);
    if (open && !this.disposed) this.timer = window.setTimeout(() => void this.look(), LOOK_AGAIN_MS);
  }

  dispose(): void {
    this.disposed = true;
    window.clearTimeout(this.timer);
    for (const s of this.sources.values()) s.close();
    this.sources.clear();
  }

  private async look(): Promise<void> {
    if (this.disposed) return;
    const { streams } = await get<{ streams: StreamInfo[] }>(pathTo('taskStreams', { id: this.workflowId, task: this.task })).catch(() => ({ streams: [] }));
    for (const s of streams) if (!this.sources.has(s.name)) this.follow(s.name);
  }

  private follow(name: string): void {
    const out = h('pre', { class: 'stream-text', 'data-testid': `stream-${name}` });
    const count = h('span', { class: 'muted', 'data-testid': `stream-count-${name}` }, '0');
    this.el.append(h('h4', {}, `Stream ${name} `, count, ' chunks'), out);
    const source = new EventSource(pathTo('taskStream', { id: this.workflowId, task: this.task, name }));
    this.sources.set(name, source);
    let n = 0;
    let attempt = 0;
    source.addEventListener('chunk', (e) => {
      const c = JSON.parse((e as MessageEvent<string>).data) as { attempt: number; chunk: unknown };
      // a new attempt starts a new stream: show it from its start
      if (c.attempt !== attempt && attempt !== 0) out.textContent = '';
      attempt = c.attempt;
      out.append(h('span', { class: 'chunk' }, typeof c.chunk === 'string' ? c.chunk : `${JSON.stringify(c.chunk)}\n`));
      count.textContent = String(++n);
    });
    source.addEventListener('end', () => source.close());
  }
}
