import { existsSync, statSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { didYouMean } from '../compiler/diagnostics.js';
import { formatDiagnostics } from '../compiler/format/index.js';
import { isDefinitionFile, readSource } from '../compiler/load.js';
import { validate, type WorkflowDefinition } from '../compiler/validate.js';
import { displayPath, readSourceTexts } from './definitions.js';
import { type Io, SubjectError, UsageError } from './io.js';
import { projectChecks } from './project.js';

/**
 * A definition named by file path or by workflow name, validated together with the definitions folder so
 * cross-file rules (start targets, duplicate names) hold. Throws SubjectError with the diagnostics when
 * the definition is not valid.
 */
export function resolveDefinition(io: Io, target: string, set: { files: string[]; label: string }): WorkflowDefinition {
  const folderFiles = set.files;
  const definitionsDir = set.label;
  const asFile = resolve(io.cwd, target);
  const isFile = existsSync(asFile) && statSync(asFile).isFile();
  if (!isFile && (isDefinitionFile(target) || target.includes('/'))) {
    // a file of the definitions named nearly so
    const near = didYouMean(
      target,
      folderFiles.map((f) => relative(io.cwd, f)),
    );
    throw new UsageError(`no such file: ${target}${near ? `; did you mean ${near}?` : ''}`);
  }
  const files = isFile && !folderFiles.includes(asFile) ? [...folderFiles, asFile] : folderFiles;
  const sources = files.map((f) => ({ ...readSource(f), path: displayPath(io, f) }));
  const result = validate(sources, projectChecks(io));
  const wanted = isFile ? displayPath(io, asFile) : undefined;
  const definition = result.definitions.find((d) => (wanted ? d.file === wanted : d.name === target));
  if (definition) return definition;
  const mine = result.diagnostics.filter((d) => (wanted ? d.file === wanted : result.checked.some((c) => c.file === d.file && c.name === target)));
  if (mine.length > 0) {
    const report = {
      diagnostics: mine,
      files: 1,
      errors: mine.filter((d) => d.severity === 'error').length,
      warnings: mine.filter((d) => d.severity === 'warning').length,
    };
    throw new SubjectError(formatDiagnostics(report, 'text', { sources: readSourceTexts(report, io) }).trimEnd());
  }
  if (isFile) throw new SubjectError(`${wanted}: not a valid definition`);
  const known = result.definitions.map((d) => d.name);
  const like = didYouMean(target, known);
  throw new SubjectError(
    `no workflow named "${target}" in ${definitionsDir}${like ? `; did you mean "${like}"?` : known.length > 0 ? ` (known: ${known.join(', ')})` : ''}`,
  );
}
