import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Served by the platform at /console (src/modules/console/routes.ts); `npm run dev` proxies the API.
// The SDK is bundled from its TypeScript sources (no `npm run build:packages` needed first; tsconfig.json maps it the same way).
export default defineConfig({
  base: '/console/',
  plugins: [react()],
  resolve: {
    alias: { '@agent-platform/sdk': fileURLToPath(new URL('../packages/sdk/src/index.ts', import.meta.url)) },
  },
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 1500 },
  server: {
    proxy: {
      '^/(v1|v2|auth|idp|services|search|memory|analytics|subscriptions|api-keys|owner|admin|connections)':
        'http://127.0.0.1:3000',
    },
  },
});
