import { readSources } from './load.js';
import { type ValidateOptions, type ValidationResult, validate } from './validate.js';

/**
 * Validates every definition in a folder together; the valid ones come back ready to compile. Apart from
 * load.ts, so reading files (what every CLI command does for its config) does not load the validator.
 */
export function loadDefinitions(dir: string, options: ValidateOptions = {}): ValidationResult {
  return validate(readSources([dir], { maxBytes: options.limits?.maxBytes }), options);
}
