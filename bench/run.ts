import { cpus } from 'node:os';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchCompiler } from './compiler.js';
import { benchRuntime } from './runtime.js';
import { benchWaits } from './waits.js';
import { benchTesting } from './testing.js';

// the bench runs compiled (dist/bench), as graphile-worker does: find the repository above it
let repoRoot = dirname(fileURLToPath(import.meta.url));
while (!existsSync(join(repoRoot, 'package.json'))) repoRoot = dirname(repoRoot);
const spin = performance.now();
for (let i = 0, s = 0; i < 1e8; i++) s += i;
console.log(`braid bench on ${cpus().length} cores (${cpus()[0]?.model ?? 'cpu'}), Node ${process.version}`);
console.log(`machine speed: a 1e8-iteration JS loop takes ${(performance.now() - spin).toFixed(0)} ms here (about 70-100 ms on a current laptop)\n`);
const only = process.env.BENCH_ONLY;
if (only === undefined || only === 'compiler') benchCompiler(repoRoot);
if (only === undefined || only === 'runtime') await benchRuntime();
if (only === undefined || only === 'waits') await benchWaits();
if (only === undefined || only === 'testing') benchTesting(repoRoot);
