// Writes braid's own schemas' validators as plain CommonJS functions beside the built compiler
// (dist/src/compiler/validators/NAME.cjs), so a command that checks its config or a definition does not load
// ajv and compile the schema first (~150 ms of every CLI command). Run after tsc; the compiler falls back to
// compiling when they are missing (running from source). Usage: node scripts/build-validators.mjs [DIST]
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import standaloneModule from 'ajv/dist/standalone/index.js';

const standaloneCode = standaloneModule.default ?? standaloneModule;
const dist = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'dist'));
const { OWN_SCHEMA_OPTIONS, PRECOMPILED_DIR, compileOwnSchema } = await import(pathToFileURL(join(dist, 'src/compiler/schemas.js')).href);
const out = join(dist, 'src/compiler', PRECOMPILED_DIR);
mkdirSync(out, { recursive: true });
for (const name of Object.keys(OWN_SCHEMA_OPTIONS)) {
  const { ajv, validate } = compileOwnSchema(name, { code: { source: true } });
  writeFileSync(join(out, `${name}.cjs`), standaloneCode(ajv, validate));
}
