import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, runCliInProcess } from '../helpers/cli.js';
import { patient } from '../helpers/patience.js';
import { project } from '../helpers/project.js';

const REFUND = `name: refund
inputs: { type: object, required: [amount], properties: { amount: { type: number } } }
tasks:
  fraud_check:
    kind: fraud_check
    args: { amount: "\${{ inputs.amount }}" }
  decide:
    kind: decide
    deps: [fraud_check]
    args:
      risk: '\${{ deps["fraud_check"].output.risk }}'
      reasons: '\${{ deps["fraud_check"].output.reasons }}'
    wait:
      expr: review || sla
      terms:
        review: { signal: review, where: payload.ok == true }
        sla: { timer: { after_wait_started: 1h } }
  notify: { kind: notify, deps: [decide] }
`;

const CONFIG = `definitions: definitions
kinds:
  fraud_check:
    returns:
      type: object
      required: [risk]
      properties:
        risk: { type: number }
        reasons: { type: array, items: { type: string } }
`;

/** The handlers module an application writes, typed by what `braid types` wrote (braid's published types: dist). */
const handlers = (
  fraudCheck: string,
  reviewers = 'ctx.wait.terms.review.signals.map((s) => s.id)',
  why = "(args.reasons ?? []).join(', ')",
) => `import { defineHandlers } from '${join(repoRoot, 'dist/src/index.js')}';
import type { KindArgs, KindOutputs, KindWaits } from './braid-types.js';

export default defineHandlers<KindArgs, KindOutputs, KindWaits>({
  fraud_check: async (args) => (${fraudCheck}),
  decide: async (args, ctx) => ({ approve: args.risk < 0.5, why: ${why}, by: ${reviewers}, late: ctx.wait.terms.sla.value }),
  notify: async () => undefined,
});
`;

/** tsc over the application's handlers, strict, as its own CI would run it. */
function typeCheck(dir: string): { code: number; out: string } {
  const r = spawnSync(
    process.execPath,
    [join(repoRoot, 'node_modules/typescript/bin/tsc'), '--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--target', 'es2022', 'handlers.ts'],
    { cwd: dir, encoding: 'utf8', timeout: patient(120_000) },
  );
  return { code: r.status ?? -1, out: r.stdout + r.stderr };
}

describe('braid types: what each kind returns, and args rendered from typed outputs', () => {
  it('writes KindOutputs from returns (the config kinds too), KindWaits from waits, and types a deferred arg by its dep output; tsc holds handlers to all three', async () => {
    const dir = project({ 'braid.config.yaml': CONFIG, 'definitions/refund.yaml': REFUND, 'package.json': '{ "type": "module" }' });
    const run = await runCliInProcess(['types', '--out', 'braid-types.d.ts'], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    const written = readFileSync(join(dir, 'braid-types.d.ts'), 'utf8');
    // reasons is not required by fraud_check's returns: the arg is left out when absent, so it is optional
    expect(written).toContain('  decide: {\n    risk: number;\n    reasons?: string[];\n  };');
    expect(written).toContain(
      "/** What each kind's handler returns, from its tasks' `returns` (unknown where a task of the kind has none). */\nexport interface KindOutputs {\n  decide: unknown;\n  fraud_check: {\n    risk: number;\n    reasons?: string[];\n  };\n  notify: unknown;\n}\n",
    );

    writeFileSync(join(dir, 'handlers.ts'), handlers("{ risk: args.amount > 100 ? 0.9 : 0.1, reasons: ['amount'] }"));
    expect(typeCheck(dir)).toMatchObject({ code: 0, out: '' });

    // a handler whose return breaks its kind's returns is a type error at the handler
    writeFileSync(join(dir, 'handlers.ts'), handlers("{ risk: 'high' }"));
    const broken = typeCheck(dir);
    expect(broken.code).not.toBe(0);
    expect(broken.out).toMatch(/^handlers\.ts\(5,\d+\): error TS2322: [\s\S]*Type '\{ risk: string; \}' is not assignable to type '\{ risk: number;/);

    // ctx.wait names the kind's terms: a misspelled one is a type error, and so is reading a timer's rows
    expect(written).toContain("export interface KindWaits {\n  decide: { review: 'signal'; sla: 'timer'; };\n  fraud_check: null;\n  notify: null;\n}\n");
    writeFileSync(join(dir, 'handlers.ts'), handlers('{ risk: 0.1 }', 'ctx.wait.terms.reveiw.signals.length + ctx.wait.terms.sla.signals.length'));
    const misread = typeCheck(dir);
    expect(misread.code).not.toBe(0);
    expect(misread.out).toContain("Property 'reveiw' does not exist");
    expect(misread.out).toContain("Property 'signals' does not exist on type 'TimerTermEvidence'");

    // an optional arg read as if it were always there is a type error
    writeFileSync(join(dir, 'handlers.ts'), handlers('{ risk: 0.1 }', undefined, "args.reasons.join(', ')"));
    const unguarded = typeCheck(dir);
    expect(unguarded.code).not.toBe(0);
    expect(unguarded.out).toContain("'args.reasons' is possibly 'undefined'");
  }, 240_000);

  it("types ctx.stream: only the kind's streams, each chunk by its schema (KindStreams); tsc holds handlers to them", async () => {
    const TALK = `name: talk
tasks:
  speak:
    kind: speak
    streams:
      tokens: { schema: { type: object, required: [text], properties: { text: { type: string } } } }
      raw: {}
  quiet: { kind: quiet }
`;
    const dir = project({ 'braid.config.yaml': 'definitions: definitions\n', 'definitions/talk.yaml': TALK, 'package.json': '{ "type": "module" }' });
    const run = await runCliInProcess(['types', '--out', 'braid-types.d.ts'], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    const written = readFileSync(join(dir, 'braid-types.d.ts'), 'utf8');
    expect(written).toContain(
      'export interface KindStreams {\n  quiet: Record<never, never>;\n  speak: { tokens: {\n    text: string;\n  }; raw: unknown; };\n}',
    );
    const module = (body: string) => `import { defineHandlers } from '${join(repoRoot, 'dist/src/index.js')}';
import type { KindArgs, KindOutputs, KindStreams, KindWaits } from './braid-types.js';

export default defineHandlers<KindArgs, KindOutputs, KindWaits, KindStreams>({
  speak: async (_args, ctx) => {
    ${body}
  },
  quiet: async () => undefined,
});
`;
    writeFileSync(join(dir, 'handlers.ts'), module("await ctx.stream('tokens').write({ text: 'hi' });\n    await ctx.stream('raw').write([1, 2]);"));
    expect(typeCheck(dir)).toMatchObject({ code: 0, out: '' });
    writeFileSync(join(dir, 'handlers.ts'), module("await ctx.stream('tokens').write({ txt: 'hi' });\n    await ctx.stream('tokenz').write(1);"));
    const broken = typeCheck(dir);
    expect(broken.code).not.toBe(0);
    expect(broken.out).toContain("'txt' does not exist in type '{ text: string; }'");
    expect(broken.out).toContain('Argument of type \'"tokenz"\' is not assignable to parameter of type \'"tokens" | "raw"\'');
  }, 240_000);

  it("types a for_each item by its list's items schema, and an arg reading an optional input or item field as optional; tsc holds handlers to them", async () => {
    const SHIP = `name: ship
inputs:
  type: object
  required: [lines]
  properties:
    note: { type: string }
    lines: { type: array, items: { type: object, required: [sku], properties: { sku: { type: string }, qty: { type: integer } } } }
tasks:
  pack:
    kind: pack
    for_each: "\${{ inputs.lines }}"
    args: { sku: "\${{ item.sku }}", qty: "\${{ item.qty }}", line: "\${{ item }}", note: "\${{ inputs.note }}" }
`;
    const dir = project({ 'braid.config.yaml': 'definitions: definitions\n', 'definitions/ship.yaml': SHIP, 'package.json': '{ "type": "module" }' });
    const run = await runCliInProcess(['types', '--out', 'braid-types.d.ts'], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    const written = readFileSync(join(dir, 'braid-types.d.ts'), 'utf8');
    expect(written).toContain(
      '  pack: {\n    sku: string;\n    qty?: number;\n    line: {\n      sku: string;\n      qty?: number;\n    };\n    note?: string;\n  };',
    );
    const module = (body: string) => `import { defineHandlers } from '${join(repoRoot, 'dist/src/index.js')}';
import type { KindArgs } from './braid-types.js';

export default defineHandlers<KindArgs>({
  pack: async (args) => ${body},
});
`;
    writeFileSync(join(dir, 'handlers.ts'), module('({ sku: args.sku.toUpperCase(), qty: (args.qty ?? 1) + args.line.sku.length, note: args.note ?? "" })'));
    expect(typeCheck(dir)).toMatchObject({ code: 0, out: '' });
    writeFileSync(join(dir, 'handlers.ts'), module('({ qty: args.qty + 1, note: args.note.trim() })'));
    const unguarded = typeCheck(dir);
    expect(unguarded.code).not.toBe(0);
    expect(unguarded.out).toContain("'args.qty' is possibly 'undefined'");
    expect(unguarded.out).toContain("'args.note' is possibly 'undefined'");
  }, 240_000);
});
