# One image for every role (PROCESS_ROLE=api | worker | all). See docs/operations.md.
FROM node:22-bookworm-slim
# bubblewrap seals deployed code off the file system (SANDBOX_ISOLATION=bwrap, the default: the
# container must allow user namespaces, see docs/operations.md); util-linux provides `unshare`,
# coreutils `timeout`.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap util-linux coreutils && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci runs the postinstall hook: without src/ yet it does nothing (it runs again below).
COPY scripts/postinstall.mjs ./scripts/
RUN npm ci --omit=dev --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts/start.mjs scripts/bundle-loader.mjs ./scripts/
COPY src ./src
# Built now, as `npm install` does (scripts/postinstall.mjs; /app is read-only to the server): the
# server bundle (dist/, what `npm start` runs) and the prepared embedded database a fresh DATA_DIR
# is copied from (node_modules/.cache/agent-platform, ~40 MB), so a container's first start does
# not run initdb. --strict: a failed step fails the build. PGlite writes some of its files 0600:
# made readable, or the server (user node) could not copy them and would run initdb itself.
RUN node scripts/postinstall.mjs --strict && chmod -R a+rX node_modules/.cache/agent-platform
RUN mkdir -p /var/lib/agent-platform && chown node:node /var/lib/agent-platform
USER node
# MALLOC_ARENA_MAX, --max-semi-space-size=2 and the two WebAssembly tiering flags: as `npm start` (package.json) — fewer glibc malloc arenas and a 2 MiB young generation semi-space, less idle RSS (docs/adr/0280-startup-semi-space-npm-start-and-the-image.md); PGlite's WebAssembly optimised later and on one thread, less start-up CPU (startup/wasm-tiering).
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000 DATA_DIR=/var/lib/agent-platform MALLOC_ARENA_MAX=2
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s CMD node -e "fetch('http://127.0.0.1:'+process.env.PORT+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "--max-semi-space-size=2", "--wasm-tiering-budget=180000000", "--wasm-num-compilation-tasks=1", "scripts/start.mjs"]
