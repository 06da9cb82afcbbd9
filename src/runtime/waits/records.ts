/** How far one wait pass reads; what it stores (tasks.wait_progress, tasks.wait_evidence) is declared in wire.ts. */
export type { WaitEvidence, WaitProgressRecord } from '../wire/index.js';

/** How many signal rows one evaluation reads per term (diagnostics may ask for more, up to the maximum). */
export const DEFAULT_SCAN_LIMIT = 10_000;
export const MAX_SCAN_LIMIT = 100_000;
