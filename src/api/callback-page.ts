/**
 * The page a callback link shows on GET: what it answers, for whom, and a form built from the term's schema —
 * one button per value of its decision (the first property with an enum of strings), fields for its other
 * plain properties — so a link in an e-mail works in any browser, with no script. Pure: text in, HTML out.
 */

export interface PageView {
  title: string;
  recipient: string | null;
  schema: Record<string, unknown>;
  /** What is being answered, in words (the term's description, rendered). */
  description?: string | null;
}

interface Field {
  name: string;
  type: 'string' | 'number' | 'integer' | 'boolean';
  required: boolean;
}

/** What the form can ask: the decision (if any) and the plain fields, or null when the schema is not a flat object. */
export function formOf(schema: Record<string, unknown>): { decision: { name: string; values: string[] } | null; fields: Field[] } | null {
  const props = schema.properties;
  if (typeof props !== 'object' || props === null || Array.isArray(props)) return null;
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === 'string') : []);
  let decision: { name: string; values: string[] } | null = null;
  const fields: Field[] = [];
  for (const [name, raw] of Object.entries(props as Record<string, unknown>)) {
    const p = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
    const values = Array.isArray(p.enum) && p.enum.length > 0 && p.enum.every((v) => typeof v === 'string') ? (p.enum as string[]) : null;
    if (values && !decision) decision = { name, values };
    else if (p.type === 'string' || p.type === 'number' || p.type === 'integer' || p.type === 'boolean')
      fields.push({ name, type: p.type, required: required.has(name) });
  }
  return { decision, fields };
}

/** The form's fields as the body they stand for, typed by the schema (empty optional fields left out). */
export function bodyFromForm(schema: Record<string, unknown>, form: URLSearchParams): Record<string, unknown> {
  const shape = formOf(schema);
  const body: Record<string, unknown> = {};
  if (!shape) return body;
  if (shape.decision && form.has(shape.decision.name)) body[shape.decision.name] = form.get(shape.decision.name);
  for (const f of shape.fields) {
    const text = form.get(f.name);
    if (f.type === 'boolean') body[f.name] = text !== null;
    else if (text !== null && text !== '') body[f.name] = f.type === 'string' ? text : Number(text);
  }
  return body;
}

const html = (text: string): string => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

const label = (name: string): string => {
  const words = name.replace(/[_-]+/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
};

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex"><title>${html(title)}</title><style>
body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#222}
label{display:block;margin:.75rem 0 .25rem}input[type=text],input[type=number],textarea{width:100%;padding:.4rem;box-sizing:border-box}
.actions{margin-top:1.25rem;display:flex;gap:.75rem}button{font:inherit;padding:.5rem 1.25rem;cursor:pointer}.note{color:#555}
</style></head><body>${body}</body></html>`;
}

/** The form of a link that still answers. */
export function formPage(view: PageView): string {
  const head =
    `<h1>${html(view.title)}</h1>${view.recipient !== null ? `<p class="note">For ${html(view.recipient)}</p>` : ''}` +
    (view.description ? `<p class="what" data-testid="description">${html(view.description)}</p>` : '');
  const shape = formOf(view.schema);
  if (!shape) return page(view.title, `${head}<p>This link takes a JSON POST; it has no form.</p>`);
  const inputs = shape.fields.map((f) => {
    const id = `f-${html(f.name)}`;
    const req = f.required ? ' required' : '';
    if (f.type === 'boolean') return `<label><input type="checkbox" name="${html(f.name)}" value="true"> ${html(label(f.name))}</label>`;
    const type = f.type === 'string' ? 'text' : 'number';
    const step = f.type === 'number' ? ' step="any"' : '';
    return `<label for="${id}">${html(label(f.name))}</label><input id="${id}" type="${type}"${step} name="${html(f.name)}"${req}>`;
  });
  const buttons = shape.decision
    ? shape.decision.values.map((v) => `<button type="submit" name="${html(shape.decision!.name)}" value="${html(v)}">${html(label(v))}</button>`)
    : ['<button type="submit">Send</button>'];
  return page(view.title, `${head}<form method="post">${inputs.join('')}<div class="actions">${buttons.join('')}</div></form>`);
}

/** The answer to a form's POST, or to a GET of a link that no longer asks anything. */
export function messagePage(title: string, message: string): string {
  return page(title, `<h1>${html(title)}</h1><p>${html(message)}</p>`);
}
