import type { Diagnostic } from '../diagnostics.js';
import { formatGithub } from './github.js';
import { formatSarif } from './sarif.js';
import { formatText, summaryLine } from './text.js';

export type OutputFormat = 'text' | 'json' | 'github' | 'sarif';
export const OUTPUT_FORMATS: readonly OutputFormat[] = ['text', 'json', 'github', 'sarif'];

export interface Report {
  diagnostics: readonly Diagnostic[];
  files: number;
  errors: number;
  warnings: number;
}

export interface FormatOptions {
  sources?: ReadonlyMap<string, string>;
  color?: boolean;
  toolVersion?: string;
}

export function formatDiagnostics(report: Report, format: OutputFormat, options: FormatOptions = {}): string {
  switch (format) {
    case 'text':
      return (
        formatText(report.diagnostics, { sources: options.sources ?? new Map(), color: options.color }) +
        summaryLine(report.files, report.errors, report.warnings) +
        '\n'
      );
    case 'json':
      return `${JSON.stringify({ diagnostics: report.diagnostics, files: report.files, errors: report.errors, warnings: report.warnings }, null, 2)}\n`;
    case 'github':
      return formatGithub(report.diagnostics);
    case 'sarif':
      return formatSarif(report.diagnostics, options.toolVersion ?? '0.0.0');
  }
}
