/**
 * What braid test (src/testing) needs of the runtime beyond its API, named here so that is all it reaches:
 * emptying the run tables between tests, whether work is available or maintenance is due at the virtual time,
 * the record of each ended run (coverage), a name's current definition, the signal keys a wait declares, and
 * a test's schedules deployed on its virtual clock.
 */

export { deployTestSchedules } from './schedules/deploy.js';
export { currentDefinition } from './sql/definitions.js';
export { anyAvailable, maintenanceDue } from './sql/next-due.js';
export { recordEnded, resetRuns } from './sql/reset.js';
export { declaredKeys } from './waits/declared.js';
