/**
 * Opens an embedded database folder (argv[2]) as a braid process would, at an instant its parent names (so that
 * several processes race for it): says "ready" once loaded, then reads the instant (epoch ms) from stdin; writes
 * a row naming itself, holds the folder for a moment and closes; prints "opened" or the error's name and message.
 */
import { createInterface } from 'node:readline';
import { createPglite } from '../../src/runtime/db/pglite.js';

const dir = process.argv[2];
process.stdout.write('ready\n');
const lines = createInterface({ input: process.stdin });
const at = Number(await new Promise<string>((resolve) => lines.once('line', resolve)));
lines.close();
while (Date.now() < at - 20) await new Promise((r) => setTimeout(r, Math.min(50, at - 20 - Date.now())));
while (Date.now() < at);
try {
  const db = await createPglite({ dataDir: dir });
  process.stdout.write('opened\n');
  await db.query('CREATE TABLE IF NOT EXISTS opened_by (pid int)');
  await db.query('INSERT INTO opened_by VALUES ($1)', [process.pid]);
  await new Promise((r) => setTimeout(r, 1500));
  await db.close();
} catch (error) {
  process.stdout.write(`${(error as Error).name}: ${(error as Error).message}\n`);
  process.exitCode = 1;
}
