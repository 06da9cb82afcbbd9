import type { CompileLimits } from '../../compiler/compile-error.js';
import type { DataKeys } from '../db/sealing.js';
import type { StatementContext } from '../sql/advance.js';
import type { InsertExtras } from '../sql/insert.js';
import type { TraceParent } from '../telemetry/traceparent.js';
import type { Tracing } from '../telemetry/tracing.js';
import type { DefinitionCache } from './definition-cache.js';

/** What a sequence of the engine works with in its transaction: the statements' context and the definitions. */
export interface AdvanceContext extends StatementContext {
  definitions: DefinitionCache;
  /** Where spans go (OpenTelemetry): child workflows begin theirs as they are inserted. */
  tracing?: Tracing;
  /** The keys sensitive values are sealed with before they are stored (none: a definition with them cannot start). */
  dataKeys?: DataKeys;
}

/** What a start takes beside its definition and inputs. */
export interface StartIn {
  /** A caller-chosen id (a business key): a second start with the same name and inputs finds the first. */
  id?: string;
  limits?: Partial<CompileLimits>;
  /** The caller's trace, when it passed one. */
  caller?: TraceParent;
  extras?: Omit<InsertExtras, 'traceContext'>;
}
