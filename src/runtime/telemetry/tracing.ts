/**
 * braid's spans, through `@opentelemetry/api` only (docs/operating.md): a span per
 * workflow attempt (`braid.workflow NAME`, made when the attempt begins), a span per task attempt
 * (`braid.task NAME`, its child, live while the handler runs, so the handler's own spans nest under it), a span
 * per resolved wait (`braid.wait NAME`, from activation to resolution, linked to the signals' senders and the
 * awaited workflows) and a span per signal (`braid.signal KEY`). A span made in one process and continued in
 * another (days later, perhaps) is carried by its stored traceparent. Without the API, or with no provider
 * registered, nothing is made and nothing is read for it.
 */
import type { Attributes, Context, Link, Span, SpanContext, Tracer } from '@opentelemetry/api';
import { errorMessage } from '../core/describe-error.js';
import type { TaskSpan } from '../worker/handlers.js';
import { type OtelApi, otelApi, type TracerProviderLike } from './otel-api.js';
import { loadTraceParent, storeTraceParent, type TraceParent } from './traceparent.js';

const TRACER = 'braid';
/** How long "is a provider registered?" is taken as answered. */
const ENABLED_TTL_MS = 1000;

/** What a handler's ctx.span is when nothing records: every call does nothing. */
export const NOOP_SPAN: TaskSpan = {
  spanContext: () => ({ traceId: '00000000000000000000000000000000', spanId: '0000000000000000', traceFlags: 0 }),
  isRecording: () => false,
  setAttribute() {
    return this;
  },
  setAttributes() {
    return this;
  },
  addEvent() {
    return this;
  },
};

/** A span braid began and ends when what it covers ends (a start's transaction, an attempt). */
export interface OpenSpan {
  span: Span;
  /** The context to run under (the span active), and to store for spans made later. */
  context: Context;
  /** The span's traceparent as stored on the row it belongs to. */
  stored: string;
}

export class Tracing {
  private readonly provider?: TracerProviderLike;
  private checkedAt = 0;
  private on = false;

  constructor(
    private readonly api: OtelApi | null = otelApi(),
    provider?: TracerProviderLike,
  ) {
    this.provider = provider;
  }

  /** Whether spans are recorded: the API is there, and a provider was given or registered. */
  enabled(): boolean {
    if (!this.api) return false;
    if (this.provider) return true;
    const now = Date.now();
    if (now - this.checkedAt > ENABLED_TTL_MS) {
      this.checkedAt = now;
      const p = this.api.trace.getTracerProvider() as TracerProviderLike & { getDelegateTracer?: (name: string) => unknown };
      // the API's stand-in provider has a delegate once one is registered (any other provider records)
      this.on = typeof p.getDelegateTracer !== 'function' || p.getDelegateTracer(TRACER) !== undefined;
    }
    return this.on;
  }

  private tracer(): Tracer {
    const provider = this.provider ?? this.api!.trace.getTracerProvider();
    return provider.getTracer(TRACER) as Tracer;
  }

  /** The context a caller's span continues: its explicit traceparent, else whatever is active. */
  callerContext(parent?: TraceParent): Context | undefined {
    if (!this.api || !this.enabled()) return undefined;
    return parent ? this.contextOf(parent) : this.api.context.active();
  }

  /** A context whose (remote) span is the stored one, or the root context. */
  contextOf(parent: TraceParent | string | null | undefined): Context {
    const api = this.api!;
    const p = typeof parent === 'string' || parent == null ? loadTraceParent(parent) : parent;
    if (!p) return api.ROOT_CONTEXT;
    return api.trace.setSpanContext(api.ROOT_CONTEXT, this.spanContextOf(p));
  }

  private spanContextOf(p: TraceParent): SpanContext {
    return {
      traceId: p.traceId,
      spanId: p.spanId,
      traceFlags: p.traceFlags,
      isRemote: true,
      ...(p.traceState ? { traceState: this.api!.createTraceState(p.traceState) } : {}),
    };
  }

  /** Begins a span under `parent`; null when nothing records. */
  begin(
    name: string,
    kind: 'producer' | 'consumer' | 'internal',
    attributes: Attributes,
    parent: Context | undefined,
    links: { stored: string | null; attributes: Attributes }[] = [],
  ): OpenSpan | null {
    if (!this.api || !this.enabled()) return null;
    const api = this.api;
    const spanKind = kind === 'producer' ? api.SpanKind.PRODUCER : kind === 'consumer' ? api.SpanKind.CONSUMER : api.SpanKind.INTERNAL;
    const span = this.tracer().startSpan(name, { kind: spanKind, attributes, links: this.links(links) }, parent ?? api.ROOT_CONTEXT);
    const sc = span.spanContext();
    const context = api.trace.setSpan(parent ?? api.ROOT_CONTEXT, span);
    const traceState = sc.traceState?.serialize();
    return {
      span,
      context,
      stored: storeTraceParent({ traceId: sc.traceId, spanId: sc.spanId, traceFlags: sc.traceFlags, traceState: traceState || undefined }),
    };
  }

  /** Links to stored span contexts (those never recorded are left out). */
  private links(links: { stored: string | null; attributes: Attributes }[]): Link[] {
    const resolved: Link[] = [];
    for (const l of links) {
      const p = loadTraceParent(l.stored);
      if (p) resolved.push({ context: this.spanContextOf(p), attributes: l.attributes });
    }
    return resolved;
  }

  /** Ends a span braid began: an error marks it failed (its type as `error.type`). */
  end(open: OpenSpan | null, error?: { message: string; type?: string }, attributes: Attributes = {}): void {
    if (!open) return;
    const { span } = open;
    span.setAttributes(attributes);
    if (error) {
      if (error.type) span.setAttribute('error.type', error.type);
      span.setStatus({ code: this.api!.SpanStatusCode.ERROR, message: error.message });
    }
    span.end();
  }

  /** Ends a span braid began whose work threw: the error's message, and its name as `error.type`. */
  fail(open: OpenSpan | null, error: unknown): void {
    this.end(open, { message: errorMessage(error), type: error instanceof Error ? error.name : 'error' });
  }

  /** Runs fn with the span active (so spans made inside it, by the handler, nest under it). */
  run<T>(open: OpenSpan | null, fn: () => T): T {
    return open ? this.api!.context.with(open.context, fn) : fn();
  }

  /**
   * A span for something that already happened (a wait, from activation to resolution), emitted now, under the
   * stored parent, with links to stored contexts.
   */
  emit(
    name: string,
    parent: string | null,
    times: { start: Date; end: Date },
    attributes: Attributes,
    links: { stored: string | null; attributes: Attributes }[],
  ): void {
    if (!this.api || !this.enabled()) return;
    const span = this.tracer().startSpan(
      name,
      { kind: this.api.SpanKind.INTERNAL, attributes, links: this.links(links), startTime: times.start },
      this.contextOf(parent),
    );
    span.end(new Date(Math.max(times.end.getTime(), times.start.getTime())));
  }
}

/**
 * What a row stores as its span: the span braid made, or, when nothing records in this process (a CLI, an API
 * server without an SDK), the caller's own traceparent, so the spans that processes with a provider make later
 * still continue the caller's trace.
 */
export function continued(span: OpenSpan | null, caller: TraceParent | undefined): string | null {
  return span?.stored ?? (caller ? storeTraceParent(caller) : null);
}
