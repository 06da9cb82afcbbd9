import { describe, expect, it } from 'vitest';
import { CompileError } from '../../src/compiler/compile-error.js';
import { backend, drivenRuntime } from '../helpers/runtime.js';

const onboard = `name: onboard
inputs:
  type: object
  required: [batches, which]
  properties:
    batches: { type: array, items: { type: array, items: { type: string } } }
    which: { type: integer }
tasks:
  connect:
    kind: connect
    for_each: \${{ inputs.batches[inputs.which] }}
`;

describe(`a start whose templates fail (${backend})`, () => {
  it('names the task and the field, since a registered version has no text to point into', async () => {
    const rt = await drivenRuntime({ definitions: { onboard } });
    const error = await rt.start('onboard', { batches: [['crm']], which: 3 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CompileError);
    expect((error as CompileError).diagnostics.map((d) => d.message)).toEqual([
      'task "connect", for_each: template failed: No such key: index out of bounds, index 3 >= size 1',
    ]);
    expect(await rt.start('onboard', { batches: [['crm']], which: 0 })).toMatch(/^[0-9A-Z]{26}$/);
  });
});
