import type { Rule } from '../diagnostics.js';

/** One line per rule, for SARIF rule metadata and `braid validate --help`. */
export const RULE_DESCRIPTIONS: Record<Rule, string> = {
  schedule: 'A schedule that cannot tick as written: its cron line, time zone, interval, jitter, bounds or inputs.',
  'flow-control':
    'Flow control that cannot work as written: a limit, weight or window under 1, a key read before it exists, or a key whose every value is new (a warning).',
  'yaml-syntax': 'The file is not well-formed YAML or JSON (or not UTF-8 text).',
  'duplicate-key': 'A mapping holds the same key twice (including duplicate task names).',
  'yaml-alias-limit': 'Aliases expand to too many nodes (an alias bomb).',
  schema: 'The definition does not match the workflow schema (type, required key, enum, range, ...).',
  'unknown-key': 'A key the schema does not know.',
  'invalid-name': 'A workflow, task, term, timer or signal name that does not match its pattern.',
  'duplicate-workflow': 'Two files define a workflow with the same name.',
  'file-name': 'The file name differs from the workflow name.',
  'unknown-dep': 'A dependency names a task that does not exist.',
  'self-dep': 'A task depends on itself.',
  cycle: 'Dependencies form a cycle.',
  'invalid-duration': 'A duration that is not 250ms, 30s, 15m, 2h, 7d or ISO 8601.',
  'invalid-timestamp': 'A time that is not RFC 3339.',
  'cel-syntax': 'A CEL expression or ${{ }} template that does not parse.',
  'cel-type': 'A CEL expression whose types do not fit (or that must return a bool and does not).',
  'cel-unknown-ref': 'A CEL reference to an undeclared input, dep, signal key, timer or task.',
  'cel-optional':
    'A read of a field that may be absent (an input neither required nor defaulted, an output field not required) ' +
    'without a has() guard, a conditional or an optional select.',
  'unknown-term': 'wait.expr names something that is not a term of the wait.',
  'unused-term': 'A wait term that expr never uses.',
  'timer-anchor': 'after_task_finalized names a task that is not a direct dep.',
  'wait-shape': 'A wait or term of the wrong shape (several kinds, several terms without expr, ...).',
  'for-each': 'for_each (or key) misused, or for_each does not yield a list.',
  'unknown-workflow': 'start names a workflow that is not defined.',
  'unknown-group': 'A workflows term waits on a group that no direct dep starts.',
  'input-limit': 'The file is too large or too deeply nested.',
  'inputs-schema': 'The inputs block is not a valid JSON Schema.',
  'returns-schema': "A task's returns (its handler's output schema) is not a valid JSON Schema, or is on a task with no handler.",
  'callback-schema': "A callback term's schema (the body its links take) is not a valid JSON Schema.",
  'stream-schema': "A task's stream chunk schema is not a valid JSON Schema, or the task has no handler to write streams.",
  'sensitive-leak':
    'A value marked sensitive: true read where it would be stored in clear: a business key, a flow-control or debounce key, a for_each key; ' +
    'or a sensitive annotation that is not true or false.',
  'unknown-event': "A trigger names an event that the project config's events: does not declare.",
  'invalid-inputs': 'Start inputs do not match the inputs schema, or for_each keys are invalid or repeated.',
  'template-in-cel': 'A ${{ }} template inside a field that is raw CEL (where, expr, when): write the expression directly.',
  config: 'The project config file (braid.config.yaml or .json) does not match its schema.',
  'test-schema': 'A workflow test file (*.test.yaml) does not match its schema, or names a workflow that is not defined.',
  'test-unknown-task': 'A test mocks or expects a task (or a wait term) that the workflow does not have.',
  'test-unknown-signal': 'A test emits a signal key that no task of the workflow waits on.',
  'test-mock-kind': 'A test mocks kind:NAME, a kind that no task of the workflow (or of the workflows it starts) runs.',
  'test-mock-output': "A test mock's output breaks the returns schema of the task it stands in for: the real handler could never return it.",
  'renamed-from': 'renamed_from names a task that still exists, the task itself, or the same old name as another task.',
  'deploy-missing-handler': 'A kind that running workflows (on some version) or the version to deploy still need has no handler in the handlers module.',
  'deploy-signal-key': 'Running workflows on an older version wait on a signal key the new version no longer declares: senders must keep sending it.',
  'deploy-unmovable':
    'Running workflows of an older version that braid upgrade could not move to the version to deploy (a removed task not ended, a changed kind), with why.',
  'deploy-args-shape': "A kind's args differ in shape between versions with running workflows: its handler receives both.",
  'deploy-inputs': 'The new inputs schema rejects inputs the current version accepted (a new required input without a default, a narrowed type).',
  'cel-cost': 'CEL that may run too long: nested comprehensions over unbounded lists (a warning), or a compile over its budget (an error).',
};
