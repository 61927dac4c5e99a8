import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Served by the platform at /console (src/modules/console/routes.ts); `npm run dev` proxies the API.
export default defineConfig({
  base: '/console/',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 1500 },
  server: { proxy: { '^/(v1|v2|auth|idp|services|search|memory|analytics|subscriptions|api-keys|owner|admin)': 'http://127.0.0.1:3000' } },
});
