// npm test's build: type-check and build (the web UI too) before the suites run. CI builds once and runs its
// two lanes side by side on that build (BRAID_TEST_PREBUILT=1), so neither rewrites what the other runs.
import { spawnSync } from 'node:child_process';

if (process.env.BRAID_TEST_PREBUILT !== '1') {
  for (const [command, args] of [
    ['npx', ['tsc', '-p', '.']],
    ['node', ['scripts/build-validators.mjs']],
    ['npm', ['run', 'build:ui']],
  ]) {
    const r = spawnSync(command, args, { stdio: 'inherit', shell: process.platform === 'win32' });
    if (r.status !== 0) process.exit(r.status ?? 1);
  }
}
