import { isScalar, type Node, Scalar } from 'yaml';

/**
 * Maps each character of a YAML string scalar's value to its offset in the source text, so a position
 * inside a CEL expression can be reported at the right file line:col whether the expression is written
 * plain, single-quoted, double-quoted (with escapes), or as a literal or folded block. Returns one offset
 * per value character plus one for the end. When the scalar is written in a way this mapping does not
 * reproduce exactly, every character maps to the scalar's start: never a wrong position, only a coarser one.
 */
export function scalarOffsets(node: Node | undefined, text: string): number[] | undefined {
  if (!isScalar(node) || typeof node.value !== 'string' || !node.range) return undefined;
  const value = node.value;
  const [start, end] = node.range;
  const raw = text.slice(start, end);
  let mapped: Mapped | undefined;
  switch (node.type) {
    case Scalar.PLAIN:
      mapped = foldFlow(raw, start, 'plain');
      break;
    case Scalar.QUOTE_SINGLE:
      mapped = foldFlow(raw.slice(1, -1), start + 1, 'single');
      break;
    case Scalar.QUOTE_DOUBLE:
      mapped = foldFlow(raw.slice(1, -1), start + 1, 'double');
      break;
    case Scalar.BLOCK_LITERAL:
    case Scalar.BLOCK_FOLDED:
      mapped = block(raw, start, node.type === Scalar.BLOCK_FOLDED);
      break;
  }
  if (mapped && mapped.chars.join('') === value) return [...mapped.offsets, mapped.end];
  return new Array(value.length + 1).fill(start);
}

interface Mapped {
  chars: string[];
  offsets: number[];
  end: number;
}

const DOUBLE_ESCAPES: Record<string, string> = {
  '0': '\0',
  a: '\x07',
  b: '\b',
  t: '\t',
  '\t': '\t',
  n: '\n',
  v: '\v',
  f: '\f',
  r: '\r',
  e: '\x1b',
  ' ': ' ',
  '"': '"',
  '/': '/',
  '\\': '\\',
  N: '\x85',
  _: '\xa0',
  L: '\u2028',
  P: '\u2029',
};

function foldFlow(content: string, base: number, style: 'plain' | 'single' | 'double'): Mapped | undefined {
  const out: Mapped = { chars: [], offsets: [], end: base + content.length };
  const lines = splitLines(content);
  let joinWithoutSpace = false;
  for (let li = 0; li < lines.length; li++) {
    const { text: line, offset } = lines[li];
    let from = 0;
    let to = line.length;
    if (li > 0) while (from < to && (line[from] === ' ' || line[from] === '\t')) from++;
    if (li < lines.length - 1) while (to > from && (line[to - 1] === ' ' || line[to - 1] === '\t')) to--;
    const isEmpty = from === to;
    if (li > 0 && !joinWithoutSpace) {
      if (isEmpty && li < lines.length - 1) {
        push(out, '\n', base + offset - 1);
        continue;
      }
      const prevEmpty = li > 1 && lines[li - 1].text.trim() === '';
      if (!prevEmpty) push(out, ' ', base + offset - 1);
    }
    joinWithoutSpace = false;
    for (let i = from; i < to; i++) {
      const c = line[i];
      const at = base + offset + i;
      if (style === 'single' && c === "'" && line[i + 1] === "'") {
        push(out, "'", at);
        i++;
      } else if (style === 'double' && c === '\\') {
        const next = line[i + 1];
        if (next === undefined) {
          joinWithoutSpace = true;
          break;
        }
        const hex = next === 'x' ? 2 : next === 'u' ? 4 : next === 'U' ? 8 : 0;
        if (hex > 0) {
          const code = parseInt(line.slice(i + 2, i + 2 + hex), 16);
          if (Number.isNaN(code)) return undefined;
          // one entry per UTF-16 unit, as CEL counts positions: a character outside the BMP is two
          const text = String.fromCodePoint(code);
          for (let k = 0; k < text.length; k++) push(out, text[k], at);
          i += 1 + hex;
        } else if (next in DOUBLE_ESCAPES) {
          push(out, DOUBLE_ESCAPES[next], at);
          i++;
        } else return undefined;
      } else push(out, c, at);
    }
    if (joinWithoutSpace) {
    }
  }
  return out;
}

function block(raw: string, base: number, folded: boolean): Mapped | undefined {
  const headerEnd = raw.indexOf('\n');
  if (headerEnd < 0) return { chars: [], offsets: [], end: base + raw.length };
  const header = raw
    .slice(0, headerEnd)
    .replace(/\s+#.*$/, '')
    .trim();
  const chomp = header.includes('-') ? 'strip' : header.includes('+') ? 'keep' : 'clip';
  const explicit = /[1-9]/.exec(header);
  const body = raw.slice(headerEnd + 1);
  const bodyBase = base + headerEnd + 1;
  const lines = splitLines(body);
  if (lines.length > 0 && lines[lines.length - 1].text === '') lines.pop();
  let indent = explicit ? Number(explicit[0]) : 0;
  if (!explicit) {
    const first = lines.find((l) => l.text.trim() !== '');
    if (!first) return undefined;
    indent = first.text.length - first.text.trimStart().length;
  }
  const out: Mapped = { chars: [], offsets: [], end: base + raw.length };
  let pendingBreaks: number[] = [];
  let prevMoreIndented = false;
  let seenContent = false;
  for (const { text: line, offset } of lines) {
    const content = line.slice(indent);
    const at = bodyBase + offset + indent;
    if (line.trim() === '' && line.length <= indent) {
      pendingBreaks.push(bodyBase + offset - 1);
      continue;
    }
    const moreIndented = content.startsWith(' ') || content.startsWith('\t');
    if (seenContent) {
      const lineBreak = pendingBreaks.length > 0 ? pendingBreaks[0] : at - indent - 1;
      if (folded && !moreIndented && !prevMoreIndented) {
        if (pendingBreaks.length === 0) push(out, ' ', lineBreak);
        else for (const b of pendingBreaks) push(out, '\n', b);
      } else {
        push(out, '\n', at - indent - 1);
        for (const b of pendingBreaks) push(out, '\n', b);
      }
    } else for (const b of pendingBreaks) push(out, '\n', b);
    pendingBreaks = [];
    for (let i = 0; i < content.length; i++) push(out, content[i], at + i);
    seenContent = true;
    prevMoreIndented = moreIndented;
  }
  const trailing = bodyBase + body.length - 1;
  if (chomp === 'clip' && seenContent) push(out, '\n', trailing);
  if (chomp === 'keep') {
    if (seenContent) push(out, '\n', trailing);
    for (const b of pendingBreaks) push(out, '\n', b);
  }
  return out;
}

function splitLines(s: string): { text: string; offset: number }[] {
  const lines: { text: string; offset: number }[] = [];
  let offset = 0;
  for (const part of s.split('\n')) {
    lines.push({ text: part.endsWith('\r') ? part.slice(0, -1) : part, offset });
    offset += part.length + 1;
  }
  return lines;
}

function push(m: Mapped, c: string, at: number): void {
  m.chars.push(c);
  m.offsets.push(at);
}
