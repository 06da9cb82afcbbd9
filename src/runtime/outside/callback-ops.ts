/** The runtime's face on callback links (rt.callbacks): make a term's links, take a POST, describe a link for its page. */

import { renderTemplates, TemplateError } from '../../compiler/cel/evaluate.js';
import { actorOf } from '../core/actor.js';
import { clockNow, type RuntimeContext, workflowWrite } from '../core/context.js';
import { Secrets, scrubText } from '../core/privacy.js';
import { depsScope } from '../core/scopes.js';
import { renderSecrets } from '../core/sensitive.js';
import { type TxOption, txQueryable } from '../db/types.js';
import { writeAudit } from '../sql/audit.js';
import { signalByIdempotencyKey } from '../sql/signals.js';
import { loadDepRows, loadWaitWorkflow, waitTask } from '../sql/waits.js';
import type { CallbackLink, CallbackLinkUrl, CallbackView } from '../wire/index.js';
import { readToken } from './callback-token.js';
import { type CallbackReceipt, callbackLinks, callbackTerms, goneReason, linkIdempotencyKey, receiveCallback, resolveLink } from './callbacks.js';
import { CallbackNotFoundError } from './errors.js';

/** Links with their full URLs under `base` (null URLs without one). */
export function withUrls(links: readonly CallbackLink[], base: string | undefined): CallbackLinkUrl[] {
  const root = base?.replace(/\/+$/, '');
  return links.map((l) => ({ ...l, url: root ? `${root}${l.path}` : null }));
}

export class CallbackOps {
  constructor(private readonly ctx: RuntimeContext) {}

  /** The links of a task's callback term, one per recipient. */
  async links(workflowId: string, task: string, term: string, options: TxOption & { baseUrl?: string } = {}): Promise<CallbackLinkUrl[]> {
    const q = options.tx ? txQueryable(options.tx) : this.ctx.db;
    return withUrls(await callbackLinks(q, this.ctx.s, this.ctx.keys, workflowId, task, term), options.baseUrl ?? this.ctx.publicUrl);
  }

  /**
   * A POST to a link: its body counts for the term (in the caller's transaction when given), audited as the
   * link's recipient from `address` (the request's).
   */
  receive(token: string, body: unknown, options: TxOption & { address?: string } = {}): Promise<CallbackReceipt> {
    const ref = readToken(this.ctx.keys, token);
    if (!ref) return Promise.reject(new CallbackNotFoundError());
    return workflowWrite(this.ctx, options, ref.workflowId, async (tx, advance) => {
      const r = await receiveCallback(tx, advance, this.ctx.keys, token, body);
      const who = actorOf({ actor: r.recipient === null ? 'callback link' : `callback link for ${r.recipient}`, address: options.address });
      const detail = { term: r.term, signal: r.signal.id };
      if (!r.replayed)
        await writeAudit(tx, this.ctx.s, advance.now, [{ action: 'callback', target: r.workflowId, workflow_id: r.workflowId, task: r.task, ...who, detail }]);
      return r;
    });
  }

  /**
   * What a callback term asks, in words: its `description` rendered over the workflow's inputs and the task's
   * deps as they are now, a sensitive value it reads shown `[redacted]`; null without one, or while a dep it reads
   * has no output yet.
   */
  async description(workflowId: string, task: string, term: string): Promise<string | null> {
    const { db, s } = this.ctx;
    const t = await waitTask(db, s, workflowId, task);
    const found = t && callbackTerms(t).find((x) => x.name === term);
    const template = found?.callback.description;
    const w = template !== undefined ? await loadWaitWorkflow(db, s, workflowId) : undefined;
    if (!t || template === undefined || !w) return null;
    const def = await this.ctx.definitions.find(db, w.name, w.definition_hash);
    const deps = await loadDepRows(db, s, w.id, t.deps);
    try {
      const text = renderTemplates(template, depsScope(def, w, t, deps));
      return scrubText(typeof text === 'string' ? text : JSON.stringify(text), Secrets.of(def ? renderSecrets(def, w.inputs, deps) : new Set()));
    } catch (error) {
      if (error instanceof TemplateError) return null;
      throw error;
    }
  }

  /** What a link is for and whether it still answers (a read: nothing is taken or written). */
  async view(token: string): Promise<CallbackView> {
    const link = await resolveLink(this.ctx.db, this.ctx.s, this.ctx.keys, token, false);
    const now = await clockNow(this.ctx);
    const idempotencyKey = linkIdempotencyKey(link.ref.link);
    const used = link.term.callback.single_use
      ? await signalByIdempotencyKey(this.ctx.db, this.ctx.s, { workflowId: link.ref.workflowId, key: link.term.signal, idempotencyKey, payload: null })
      : undefined;
    return {
      workflowId: link.ref.workflowId,
      task: link.ref.task,
      term: link.ref.term,
      label: link.term.label ?? null,
      recipient: link.recipient,
      schema: link.term.callback.schema,
      description: await this.description(link.ref.workflowId, link.ref.task, link.ref.term),
      gone: goneReason(link, now) ?? null,
      used: used ? used.payload : null,
    };
  }
}
