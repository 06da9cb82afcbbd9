import { isAbsolute, relative, resolve } from 'node:path';
import { readSnippetText } from '../compiler/load.js';
import type { Io } from './io.js';

/** Paths as the user sees them: relative to the working directory when inside it. */
export function displayPath(io: Io, path: string): string {
  const abs = resolve(io.cwd, path);
  const rel = relative(io.cwd, abs);
  return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? abs : rel;
}

export function readSourceTexts(result: { diagnostics: { file: string }[] }, io: Io): Map<string, string> {
  const texts = new Map<string, string>();
  for (const d of result.diagnostics) {
    if (texts.has(d.file)) continue;
    // bounded like the validation itself: no snippet for a file too large or not a regular file
    const text = readSnippetText(resolve(io.cwd, d.file));
    if (text !== undefined) texts.set(d.file, text);
  }
  return texts;
}
