import { parentPort } from 'node:worker_threads';
import { type OutputProblem, outputProblems } from '../../compiler/returns.js';
import type { OutputCheckReply, OutputCheckRequest } from './output-check.js';

/**
 * The output-check thread's body: checks large outputs against their `returns` off the worker's event loop.
 * Schemas arrive as copies: compiled once per schema text (the last 100 kept).
 */
const schemas = new Map<string, Record<string, unknown>>();

function schemaOf(text: string): Record<string, unknown> {
  let schema = schemas.get(text);
  if (!schema) {
    schema = JSON.parse(text) as Record<string, unknown>;
    schemas.set(text, schema);
    if (schemas.size > 100) schemas.delete(schemas.keys().next().value as string);
  }
  return schema;
}

parentPort?.on('message', (m: OutputCheckRequest) => {
  let reply: OutputCheckReply;
  try {
    const problems: OutputProblem[] = outputProblems(schemaOf(m.schema), m.output);
    reply = { id: m.id, problems };
  } catch (error) {
    reply = { id: m.id, error: String((error as Error).message ?? error) };
  }
  parentPort?.postMessage(reply);
});
