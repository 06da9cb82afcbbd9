/**
 * The kinds the project config serves over HTTP (`kinds.NAME.http`), as handlers beside the handlers module's:
 * their `${VAR}`s and secrets read from the environment when a process starts, each mistake one clear error.
 */
import { parseDuration } from '../compiler/duration.js';
import { parseSize } from '../compiler/size.js';
import { expandEnv, type KindConfig } from '../config/config.js';
import { type Handlers, type HttpKind, httpHandler, withHttpKinds as mergeKinds, NonRetryableError } from '../runtime/index.js';
import { type Io, SubjectError } from './io.js';
import { project } from './project.js';

/**
 * Each HTTP kind of the project config as a handler (none without a config). A kind that cannot be served (an
 * unset secret, a bad URL) is refused here, unless `lazy` (braid test, where it may be mocked): then its tasks fail
 * with that error, not retried, when one runs.
 */
export function httpKinds(io: Io, options: { lazy?: boolean; env?: NodeJS.ProcessEnv } = {}): Handlers {
  const kinds = project(io).config?.kinds ?? {};
  const out: Handlers = {};
  for (const [kind, k] of Object.entries(kinds)) {
    if (!k.http) continue;
    try {
      out[kind] = httpHandler(kind, httpKindOf(kind, k, options.env ?? process.env));
    } catch (error) {
      if (!options.lazy) throw error;
      out[kind] = () => {
        throw new NonRetryableError((error as Error).message, { code: 'http_kind_invalid' });
      };
    }
  }
  return out;
}

export function httpKindOf(kind: string, k: KindConfig, env: NodeJS.ProcessEnv): HttpKind {
  const http = k.http!;
  const at = `kinds.${kind}.http`;
  const url = expandEnv(http.url, env);
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:'))
    throw new SubjectError(`${at}.url is not an http:// or https:// URL: ${JSON.stringify(url.slice(0, 200))}`);
  const timeoutMs = http.timeout === undefined ? undefined : parseDuration(http.timeout);
  if (timeoutMs === 0) throw new SubjectError(`${at}.timeout: a request that may take no time could never answer`);
  let secret: string | undefined;
  if (http.secret_env !== undefined) {
    secret = env[http.secret_env];
    if (!secret) throw new SubjectError(`${at}.secret_env names ${http.secret_env}, which is not set: the requests could not be signed`);
  }
  const headers = Object.fromEntries(Object.entries(http.headers ?? {}).map(([h, v]) => [h, expandEnv(v, env)]));
  // a line break (from a variable, say) would make every request fail: said once, here
  const broken = Object.entries(headers).find(([, v]) => /[\r\n\0]/.test(v));
  if (broken) throw new SubjectError(`${at}.headers.${broken[0]} holds a line break or NUL once its variables are read: no request could carry it`);
  const maxOutputBytes = k.max_output === undefined ? undefined : typeof k.max_output === 'number' ? k.max_output : parseSize(k.max_output);
  return { url, timeoutMs, secret, headers, maxOutputBytes };
}

/** The handlers module's and the HTTP kinds together; a kind both serve is the command's error. */
export function withHttpKinds(handlers: Handlers, http: Handlers): Handlers {
  try {
    return mergeKinds(handlers, http);
  } catch (error) {
    throw new SubjectError((error as Error).message);
  }
}
