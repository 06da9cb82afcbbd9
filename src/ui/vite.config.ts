import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The web UI is bundled at build time into dist/ui: the server serves these files, no CDN, works offline.
export default defineConfig({
  root: fileURLToPath(new URL('./app', import.meta.url)),
  base: '/',
  logLevel: 'warn',
  build: {
    outDir: fileURLToPath(new URL('../../dist/ui', import.meta.url)),
    emptyOutDir: true,
    sourcemap: true,
    target: 'es2022',
    assetsInlineLimit: 0,
  },
});
