import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CompileError } from '../../src/compiler/compile-error.js';
import { isCallerError } from '../../src/error-codes.js';
import { backend, testRuntime } from '../helpers/runtime.js';

/** Strings of any UTF-16 units: U+0000, lone surrogates and controls included. */
const anyText = fc.string({ unit: 'binary', maxLength: 40 });
/** JSON values whose strings may hold anything, keys too. */
const anyJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    anyText,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(anyText, tie('value'), { maxKeys: 4 }),
  ),
})).value;

const DEF = `name: open
inputs: { type: object, properties: { s: { type: string } } }
tasks:
  t:
    kind: work
    args: { s: "\${{ inputs.s }}" }
    wait: { terms: { go: { signal: go, where: 'payload.ok == true' } } }
`;

/** An error the caller caused: what the API answers with a 4xx and the CLI with exit 1. */
function expectCallerError(error: unknown): void {
  expect(error instanceof CompileError || isCallerError(error), `not a caller's error: ${String(error)}`).toBe(true);
}

describe(`property: any inputs and any signal reach the database or fail as the caller's error (${backend})`, () => {
  it('start with arbitrary inputs, emit arbitrary keys, payloads, sources and idempotency keys', async () => {
    const rt = await testRuntime({ definitions: { open: DEF } });
    const id = await rt.start('open', { s: 'seed' });
    await fc.assert(
      fc.asyncProperty(anyJson, async (inputs) => {
        await rt.start('open', inputs).then(
          (started) => expect(started).toBeTypeOf('string'),
          (error: unknown) => expectCallerError(error),
        );
      }),
      { numRuns: 60 },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.constant('go'), anyText),
        anyJson,
        fc.option(anyJson, { nil: undefined }),
        fc.option(anyText, { nil: undefined }),
        async (key, payload, source, idempotencyKey) => {
          await rt
            .workflow(id)
            .signals.emit(key, payload, { source, idempotencyKey })
            .then(
              (result) => expect(result.signal.key).toBe(key),
              (error: unknown) => expectCallerError(error),
            );
        },
      ),
      { numRuns: 80 },
    );
  }, 120_000);
});
