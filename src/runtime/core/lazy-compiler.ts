/**
 * The compiler, loaded when the runtime first compiles or validates: ajv, YAML positions and the CEL checker
 * take ~200 ms to load, which every `braid status` or `braid signal` in a shell loop would pay for nothing.
 * Starts, registers, extensions, upgrades and child starts await it; after the first, Node's module cache
 * answers at once.
 */
export const compiler = () => import('../../compiler/instantiate.js');

export const validator = () => import('../../compiler/validate.js');

export const sourceReader = () => import('../../compiler/load.js');

/** The check of an output against its task's `returns` (ajv): loaded with the first task that declares one. */
export const outputChecker = () => import('../../compiler/returns.js');
