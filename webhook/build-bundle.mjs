// Bundles the webhook server into one file: what the image runs and what the tests start.
import { build } from 'esbuild';

await build({
  entryPoints: ['webhook/server/main.ts'],
  outfile: 'build/webhook/server.js',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  minify: false,
  sourcemap: true,
  legalComments: 'none',
  logLevel: 'warning',
});
