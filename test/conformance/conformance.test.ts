import { describe, it } from 'vitest';
import { heavyFile } from '../helpers/heavy.js';
import { backend } from '../helpers/runtime.js';
import { type Adapter, runScenario, scenarios } from './runner.js';

heavyFile();

/** The workers under test, each started as its users start it (conformance/README.md). */
const ADAPTERS: Adapter[] = [
  {
    name: 'typescript',
    command: [
      process.execPath,
      'bin/braid.js',
      'worker',
      '--handlers',
      'conformance/handlers/handlers.mjs',
      '--database',
      '{dsn}',
      '--schema',
      '{schema}',
      '--heartbeat',
      '200ms',
      '--dead-after',
      '2s',
      '--shutdown-timeout',
      '5',
    ],
    ready: /running \d+ kind\(s\)/,
  },
  {
    name: 'python',
    // Debian's python3, which sees Debian's python3-psycopg (the first python3 on PATH may not)
    command: [
      '/usr/bin/python3',
      '-m',
      'braid_worker',
      '--handlers',
      'conformance_handlers',
      '--dsn',
      '{dsn}',
      '--schema',
      '{schema}',
      '--heartbeat-interval',
      '0.2',
      '--dead-after',
      '2',
      '--poll-interval',
      '0.2',
      '--shutdown-grace',
      '5',
    ],
    env: { PYTHONPATH: 'clients/python:conformance/handlers' },
    ready: /braid worker \S+ ready/,
  },
];

// workers in other processes share the database: Postgres only (the embedded database is one process's)
describe.runIf(backend === 'postgres')('worker conformance', () => {
  for (const adapter of ADAPTERS) {
    describe(adapter.name, () => {
      for (const scenario of scenarios()) it(`${scenario.name}: ${scenario.description}`, () => runScenario(scenario, adapter), 180_000);
    });
  }
});
