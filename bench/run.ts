import { existsSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchClaims } from './claims.js';
import { benchCli } from './cli.js';
import { benchCompiler } from './compiler.js';
import { benchRuntime } from './runtime.js';
import { benchSchedules } from './schedules.js';
import { benchSearch } from './search.js';
import { benchTesting } from './testing.js';
import { benchWaits } from './waits.js';

// the bench runs compiled (dist/bench), as graphile-worker does: find the repository above it
let repoRoot = dirname(fileURLToPath(import.meta.url));
while (!existsSync(join(repoRoot, 'package.json'))) repoRoot = dirname(repoRoot);
const spin = performance.now();
let sum = 0;
for (let i = 0; i < 1e8; i++) sum += i;
// read, so the loop is not optimised away
if (sum < 0) throw new Error('the machine cannot add');
console.log(`braid bench on ${cpus().length} cores (${cpus()[0]?.model ?? 'cpu'}), Node ${process.version}`);
console.log(`machine speed: a 1e8-iteration JS loop takes ${(performance.now() - spin).toFixed(0)} ms here (about 70-100 ms on a current laptop)\n`);
const only = process.env.BENCH_ONLY;
if (only === undefined || only === 'compiler') benchCompiler(repoRoot);
if (only === undefined || only === 'runtime') await benchRuntime();
if (only === undefined || only === 'runtime' || only === 'claims') await benchClaims();
if (only === undefined || only === 'waits') await benchWaits();
if (only === undefined || only === 'search') await benchSearch();
if (only === undefined || only === 'schedules') await benchSchedules();
if (only === undefined || only === 'testing') benchTesting(repoRoot);
if (only === undefined || only === 'cli') await benchCli(repoRoot);
