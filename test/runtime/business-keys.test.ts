import { describe, expect, it } from 'vitest';
import { WorkflowConflictError, WorkflowIdInvalidError } from '../../src/runtime/errors.js';
import { backend, drivenRuntime } from '../helpers/runtime.js';

const definitions = {
  order: `name: order
inputs:
  type: object
  properties:
    sku: { type: string }
    qty: { type: integer, default: 1 }
  required: [sku]
tasks:
  pick: { kind: pick }
`,
  refund: `name: refund
tasks:
  pay: { kind: pay }
`,
};

describe(`business keys: a caller-chosen workflow id (${backend})`, () => {
  it('starting again with the same id, name and inputs finds the workflow; defaults and key order do not matter', async () => {
    const rt = await drivenRuntime({ definitions });
    const first = await rt.startWorkflow('order', { sku: 'A-1', qty: 1 }, { id: 'order:2026-12-01.17' });
    expect(first).toEqual({ id: 'order:2026-12-01.17', existing: false });
    expect(await rt.startWorkflow('order', { sku: 'A-1' }, { id: 'order:2026-12-01.17' })).toEqual({ id: 'order:2026-12-01.17', existing: true });
    expect(await rt.start('order', { qty: 1, sku: 'A-1' }, { id: 'order:2026-12-01.17' })).toBe('order:2026-12-01.17');
    expect((await rt.workflow('order:2026-12-01.17').tasks()).map((t) => t.name)).toEqual(['pick']);
    expect((await rt.listWorkflows()).workflows).toHaveLength(1);
  });

  it('another name or other inputs under a taken id is a conflict, never a database error', async () => {
    const rt = await drivenRuntime({ definitions });
    await rt.start('order', { sku: 'A-1' }, { id: 'o-1' });
    const other = await rt.start('order', { sku: 'B-2' }, { id: 'o-1' }).catch((e: unknown) => e);
    expect(other).toBeInstanceOf(WorkflowConflictError);
    expect((other as WorkflowConflictError).code).toBe('workflow_conflict');
    expect((other as Error).message).toBe('workflow o-1 was already started with other inputs (start it with the same inputs, or choose another id)');
    const renamed = await rt.start('refund', {}, { id: 'o-1' }).catch((e: unknown) => e);
    expect((renamed as Error).message).toBe('workflow o-1 was already started as order, not refund (choose another id)');
    expect((await rt.listWorkflows()).workflows).toHaveLength(1);
  });

  it('ids outside the pattern are refused before anything is written', async () => {
    const rt = await drivenRuntime({ definitions });
    for (const id of ['', '-x', '.x', 'a b', 'a/b', 'x'.repeat(129), 'é', 'a\u0000b']) {
      await expect(rt.start('refund', {}, { id })).rejects.toBeInstanceOf(WorkflowIdInvalidError);
    }
    await expect(rt.start('refund', {}, { id: 42 as unknown as string })).rejects.toBeInstanceOf(WorkflowIdInvalidError);
    expect(await rt.start('refund', {}, { id: 'x'.repeat(128) })).toBe('x'.repeat(128));
    expect((await rt.listWorkflows()).workflows).toHaveLength(1);
  });

  it('concurrent starts with one id: one workflow, every caller gets its id', async () => {
    const rt = await drivenRuntime({ definitions });
    const results = await Promise.all(Array.from({ length: 8 }, () => rt.startWorkflow('order', { sku: 'C' }, { id: 'race-1' })));
    expect(new Set(results.map((r) => r.id))).toEqual(new Set(['race-1']));
    expect(results.filter((r) => !r.existing)).toHaveLength(1);
    expect((await rt.listWorkflows()).workflows).toHaveLength(1);
  });
});
