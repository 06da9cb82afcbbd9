import type { IncomingMessage, ServerResponse } from 'node:http';
import type { EventsConfig, KindsConfig } from '../compiler/validate.js';
import type { Principal } from '../runtime/wire/index.js';
import type { StreamContext } from './events.js';
import type { Caller } from './http.js';
import type { RouteName } from './route-table.js';

export type { Caller };

/** What the API's handlers serve with. */
export interface RouteContext extends StreamContext {
  /** Registered before a start that names it (the CLI's `start --definitions`). */
  definitionsDir?: string;
  /** The project config's kinds and events, which a register over HTTP validates with (as braid register does). */
  projectChecks?: { kinds?: KindsConfig; events?: EventsConfig };
}

/** One request to a route: its parameters from the path, and the request itself. */
export interface Call {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  params: Record<string, string>;
  /** A change's JSON body, held to its route's declared schema before the handler runs (empty for a read). */
  body: Record<string, unknown>;
  /** Who the request is (its role allowed the route). */
  principal: Principal;
  caller: Caller;
}

/** A handler for every route of the table (the session is the server's own, before the token is checked). */
export type RouteHandlers = { [R in Exclude<RouteName, 'session'>]: (c: RouteContext, call: Call) => Promise<void> };
