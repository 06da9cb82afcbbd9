import type { Log, ReportingDescriptor, Result } from 'sarif';
import { type Diagnostic, RULES } from '../diagnostics.js';
import { RULE_DESCRIPTIONS } from './rule-descriptions.js';

/** SARIF 2.1.0, for code-scanning dashboards: every rule described once, one result per problem. */
export function formatSarif(diagnostics: readonly Diagnostic[], toolVersion: string): string {
  const rules: ReportingDescriptor[] = RULES.map((id) => ({ id, shortDescription: { text: RULE_DESCRIPTIONS[id] } }));
  const results: Result[] = diagnostics.map((d) => {
    const result: Result = {
      ruleId: d.rule,
      ruleIndex: RULES.indexOf(d.rule),
      level: d.severity === 'error' ? 'error' : 'warning',
      message: { text: d.hint ? `${d.message}\nhint: ${d.hint}` : d.message },
      locations: [
        {
          physicalLocation: {
            artifactLocation: { uri: d.file.split('\\').join('/') },
            region: { startLine: d.line, startColumn: d.column, endLine: d.end_line, endColumn: d.end_column },
          },
        },
      ],
    };
    if (d.path) result.properties = { path: d.path };
    return result;
  });
  const log: Log = {
    version: '2.1.0',
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    runs: [{ tool: { driver: { name: 'braid', version: toolVersion, rules } }, results }],
  };
  return `${JSON.stringify(log, null, 2)}\n`;
}
