/** A `${{ expr }}` span inside a string value: offsets into that string. */
export interface TemplateSpan {
  /** Offset of `${{`. */
  start: number;
  /** Offset just past `}}`. */
  end: number;
  /** The expression between the braces, untrimmed, and where it starts. */
  expr: string;
  exprStart: number;
}

export interface TemplateScan {
  spans: TemplateSpan[];
  /** Offset of a `${{` with no closing `}}`. */
  unclosedAt?: number;
}

/**
 * Finds the templates in a string. `$${{` is an escaped literal `${{`. The expression ends at the first
 * `}}` outside a CEL string literal and outside the expression's own braces, so map literals work.
 */
export function scanTemplates(s: string): TemplateScan {
  const spans: TemplateSpan[] = [];
  let i = 0;
  while (i < s.length) {
    const open = s.indexOf('${{', i);
    if (open < 0) break;
    if (open > 0 && s[open - 1] === '$') {
      i = open + 3;
      continue;
    }
    const exprStart = open + 3;
    const close = findClose(s, exprStart);
    if (close < 0) return { spans, unclosedAt: open };
    spans.push({ start: open, end: close + 2, expr: s.slice(exprStart, close), exprStart });
    i = close + 2;
  }
  return { spans };
}

function findClose(s: string, from: number): number {
  let depth = 0;
  let quote = '';
  for (let i = from; i < s.length; i++) {
    const c = s[i];
    if (quote) {
      if (c === '\\') i++;
      else if (s.startsWith(quote, i)) {
        i += quote.length - 1;
        quote = '';
      }
      continue;
    }
    if (c === '"' || c === "'") {
      quote = s.startsWith(c.repeat(3), i) ? c.repeat(3) : c;
      i += quote.length - 1;
    } else if (c === '{') depth++;
    else if (c === '}') {
      if (depth === 0 && s[i + 1] === '}') return i;
      depth = Math.max(0, depth - 1);
    }
  }
  return -1;
}

/** A value that is exactly one template keeps the expression's type; anything else renders to a string. */
export function singleTemplate(s: string, scan: TemplateScan = scanTemplates(s)): TemplateSpan | undefined {
  if (scan.spans.length !== 1) return undefined;
  const span = scan.spans[0];
  return s.slice(0, span.start).trim() === '' && s.slice(span.end).trim() === '' ? span : undefined;
}

/** The literal text between templates, with `$${{` unescaped. */
export function unescapeLiteral(s: string): string {
  return s.replace(/\$\$\{\{/g, '${{');
}

export function hasTemplate(s: string): boolean {
  return s.includes('${{');
}
