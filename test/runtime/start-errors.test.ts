import { describe, expect, it } from 'vitest';
import { CompileError } from '../../src/compiler/compile-error.js';
import { backend, drivenRuntime } from '../helpers/runtime.js';

const onboard = `name: onboard
inputs:
  type: object
  properties:
    integrations: { type: array, items: { type: string } }
tasks:
  connect:
    kind: connect
    for_each: \${{ inputs.integrations }}
`;

describe(`a start whose templates fail (${backend})`, () => {
  it('names the task and the field, since a registered version has no text to point into', async () => {
    const rt = await drivenRuntime({ definitions: { onboard } });
    const error = await rt.start('onboard', {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CompileError);
    expect((error as CompileError).diagnostics.map((d) => d.message)).toEqual(['task "connect", for_each: template failed: No such key: integrations']);
    expect(await rt.start('onboard', { integrations: ['crm'] })).toMatch(/^[0-9A-Z]{26}$/);
  });
});
