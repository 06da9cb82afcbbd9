/**
 * Example handlers for the workflows in definitions/: what `braid demo` runs. Each stands in for real work
 * (a payment provider, an email service, a PDF renderer) and returns the output the definitions read.
 */
import type { Handlers } from 'braid';

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      reject(signal.reason);
    });
  });

const handlers: Handlers = {
  // order_fulfilment
  score_fraud: async (args: { order_id: string }, ctx) => {
    await pause(20, ctx.signal);
    return { order_id: args.order_id, score: 12.5 };
  },
  charge_card: async (args: { customer_id?: string; order_id?: string; currency?: string }, ctx) => {
    await pause(30, ctx.signal);
    return { charge_id: `ch_${ctx.workflowId.slice(-6)}`, amount: 4990, currency: args.currency ?? 'EUR' };
  },
  decide_shipment: async () => ({ carrier: 'dhl' }),
  ship_parcel: async (args: { parcel: { id: string } }) => ({ parcel: args.parcel.id, tracking: `TRK-${args.parcel.id}` }),
  send_email: async (_args, ctx) => ({ message_id: `msg_${ctx.workflowId.slice(-6)}_${ctx.taskName}` }),
  // monthly_billing
  compute_invoice: async (args: { customer_id: string; month: string }, ctx) => {
    await pause(50, ctx.signal);
    return { customer_id: args.customer_id, month: args.month, lines: 3, total_cents: 4990 };
  },
  render_receipt_pdf: async (args: { customer_id: string }) => ({ url: `https://files.example.com/receipts/${args.customer_id}.pdf` }),
  // research_brief / research_topic / editorial_review
  plan_topics: async () => ({ topics: ['collection', 'sorting', 'recovery'] }),
  gather_sources: async (args: { topic: string }) => ({ sources: [`${args.topic}: survey`, `${args.topic}: field study`] }),
  summarize: async (args: { topic: string }, ctx) => ({ summary: `${args.topic}: ${Object.keys(ctx.deps).length} source set(s) summarised` }),
  synthesize_brief: async (args: { brief_id: number }) => ({ brief_id: args.brief_id, sections: 3 }),
  draft_packet: async (args: { editor: string }) => ({ editor: args.editor, pages: 12 }),
  publish_packet: async () => ({ url: 'https://news.example.com/packets/1' }),
  // expense_approval
  file_expense: async (args: { expense_id: string }) => ({ filed: args.expense_id }),
  record_decision: async (args: { expense_id: string }) => ({ expense_id: args.expense_id, decision: 'approved' }),
  // verified when this user's email_verified signal came (another user's does not count); otherwise the three days ran out
  record_verification: async (args: { user_id: string }, ctx) => {
    const { signals } = await ctx.signals.list({ key: 'email_verified' });
    return { verified: signals.some((s) => (s.payload as { user_id?: string } | null)?.user_id === args.user_id) };
  },
  activate_trial: async (args: { user_id: string; plan: string }) => ({ user_id: args.user_id, trial_ends: '+14d', plan: args.plan }),
  record_onboarding: async (args: { user_id: string }) => ({ user_id: args.user_id, onboarded: true }),
};

export default handlers;
