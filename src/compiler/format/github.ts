import type { Diagnostic } from '../diagnostics.js';

/** GitHub Actions workflow commands: each problem becomes an annotation on the pull request. */
export function formatGithub(diagnostics: readonly Diagnostic[]): string {
  return diagnostics
    .map((d) => {
      const props = [
        `file=${prop(d.file)}`,
        `line=${d.line}`,
        `col=${d.column}`,
        `endLine=${d.end_line}`,
        `endColumn=${d.end_column}`,
        `title=${prop(`braid ${d.rule}`)}`,
      ].join(',');
      const message = d.hint ? `${d.message} (hint: ${d.hint})` : d.message;
      return `::${d.severity} ${props}::${data(message)}\n`;
    })
    .join('');
}

function data(s: string): string {
  return s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

function prop(s: string): string {
  return data(s).replace(/:/g, '%3A').replace(/,/g, '%2C');
}
