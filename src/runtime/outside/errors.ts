import type { OutputProblem } from '../../compiler/returns.js';

/** A token braid did not sign, of a workflow, task or term that is not there: one answer for all (no oracle). */
export class CallbackNotFoundError extends Error {
  readonly code = 'callback_not_found' as const;
  constructor() {
    super('no such callback link');
    this.name = 'CallbackNotFoundError';
  }
}

/** Links asked for a term that is not a callback term of the task. */
export class CallbackTermUnknownError extends Error {
  readonly code = 'callback_term_unknown' as const;
  constructor(task: string, term: string, terms: readonly string[]) {
    super(`task "${task}" has no callback term "${term}" (its callback terms: ${terms.length > 0 ? terms.join(', ') : 'none'})`);
    this.name = 'CallbackTermUnknownError';
  }
}

/** The link's time is over: the wait ended (resolved, or its task or workflow ended), or the link expired. */
export class CallbackGoneError extends Error {
  readonly code = 'callback_gone' as const;
  constructor(readonly reason: string) {
    super(`this link no longer answers: ${reason}`);
    this.name = 'CallbackGoneError';
  }
}

/** A body the term's schema refuses: nothing was stored. */
export class CallbackBodyError extends Error {
  readonly code = 'callback_invalid' as const;
  constructor(readonly problems: readonly OutputProblem[]) {
    super(`the body does not fit the callback's schema: ${problems.map((p) => `${p.pointer} ${p.message}`).join('; ')}`);
    this.name = 'CallbackBodyError';
  }
}

/** A single-use link sent again with a different body: the first one counted. */
export class CallbackUsedError extends Error {
  readonly code = 'callback_used' as const;
  constructor() {
    super('this link was already used with a different body; the first one counted');
    this.name = 'CallbackUsedError';
  }
}

export class SecretMissingError extends Error {
  readonly code = 'secret_missing' as const;
  constructor() {
    super('callback links need a signing key: set BRAID_SECRET (or secret: in braid.config.yaml) to ID:SECRET, e.g. k1:$(openssl rand -base64 32)');
    this.name = 'SecretMissingError';
  }
}

/** An event whose name, id or payload braid cannot take: nothing was recorded. */
/** A signed webhook whose signature was seen within its tolerance window: a replay, refused with nothing recorded. */
export class EventReplayedError extends Error {
  readonly code = 'event_replayed' as const;
  constructor(name: string) {
    super(`this signed ${name} webhook was received already: a replay within its tolerance window records nothing`);
    this.name = 'EventReplayedError';
  }
}

export class EventInvalidError extends Error {
  readonly code = 'event_invalid' as const;
  constructor(message: string) {
    super(message);
    this.name = 'EventInvalidError';
  }
}

/** A payload its event's schema refuses: nothing was recorded, nothing started. */
export class EventPayloadError extends Error {
  readonly code = 'event_invalid' as const;
  constructor(
    event: string,
    readonly problems: readonly OutputProblem[],
  ) {
    super(`the payload does not fit the schema of event "${event}": ${problems.map((p) => `${p.pointer} ${p.message}`).join('; ')}`);
    this.name = 'EventPayloadError';
  }
}

/** A webhook's signature missing or wrong: nothing was recorded. */
export class EventSignatureError extends Error {
  readonly code = 'unauthorized' as const;
  constructor(message: string) {
    super(message);
    this.name = 'EventSignatureError';
  }
}
