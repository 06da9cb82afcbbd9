import type { StatementContext } from '../sql/advance.js';
import type { Tracing } from '../telemetry/tracing.js';
import type { DefinitionCache } from './definition-cache.js';

/** What a sequence of the engine works with in its transaction: the statements' context and the definitions. */
export interface AdvanceContext extends StatementContext {
  definitions: DefinitionCache;
  /** Where spans go (OpenTelemetry): child workflows begin theirs as they are inserted. */
  tracing?: Tracing;
}
