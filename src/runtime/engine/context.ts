import type { StatementContext } from '../sql/advance.js';
import type { DefinitionCache } from './definition-cache.js';

/** What a sequence of the engine works with in its transaction: the statements' context and the definitions. */
export interface AdvanceContext extends StatementContext {
  definitions: DefinitionCache;
}
