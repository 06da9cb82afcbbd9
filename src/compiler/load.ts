import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import type { RawSource } from './parse.js';
import { validate, type ValidateOptions, type ValidationResult } from './validate.js';

export const DEFINITION_EXTENSIONS = ['.yaml', '.yml', '.json'];

export function isDefinitionFile(path: string): boolean {
  return DEFINITION_EXTENSIONS.includes(extname(path).toLowerCase());
}

/** Definition files under a folder (recursively, skipping hidden folders and node_modules), sorted. */
export function listDefinitionFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const entry of readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const p = join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.isFile() && isDefinitionFile(entry.name)) out.push(p);
    }
  };
  walk(dir);
  return out;
}

/** Reads files and folders into sources; a folder contributes its definition files. */
export function readSources(paths: readonly string[]): RawSource[] {
  const files: string[] = [];
  for (const p of paths) {
    if (statSync(p).isDirectory()) files.push(...listDefinitionFiles(p));
    else files.push(p);
  }
  return files.map((path) => ({ path, content: readFileSync(path) }));
}

/** Validates every definition in a folder together; the valid ones come back ready to compile. */
export function loadDefinitions(dir: string, options: ValidateOptions = {}): ValidationResult {
  return validate(readSources([dir]), options);
}
