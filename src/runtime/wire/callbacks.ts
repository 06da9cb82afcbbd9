/** A callback term's links as callers see them (rt.callbacks, ctx.callbacks, the API, the UI). */

/** One link of a callback term: whom it is for (null without recipients), its token, and its path on a braid server. */
export interface CallbackLink {
  recipient: string | null;
  token: string;
  path: string;
}

/** A link with its full URL where the runtime knows where it is served (publicUrl, BRAID_PUBLIC_URL, or the asking server). */
export type CallbackLinkUrl = CallbackLink & { url: string | null };

/** What a link's page shows: whom it is for, what it answers, and whether it still does. */
export interface CallbackView {
  workflowId: string;
  task: string;
  term: string;
  label: string | null;
  recipient: string | null;
  schema: Record<string, unknown>;
  /** What is being answered, in words (the term's description, rendered); null without one. */
  description: string | null;
  /** Why it no longer answers; null while it does. */
  gone: string | null;
  /** The body it already sent (a single-use link used), else null. */
  used: unknown;
}
