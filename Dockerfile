# The image docs/deployment.md runs: `docker build -t registry.example/betting:1.0.0 .`
# Stage one installs everything and compiles; the final stage holds the compiled service and the
# production dependencies only (no TypeScript, no tsx, no compiler toolchain).
ARG NODE_VERSION=24

FROM node:${NODE_VERSION}-bookworm-slim AS build
# better-sqlite3 compiles from source when no prebuilt binary can be fetched; the image's own headers
# (/usr/local/include/node) are the ones it must be built against.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
ENV npm_config_nodedir=/usr/local
WORKDIR /app
COPY package.json package-lock.json ./
# The client package is a workspace: npm ci installs and prepares it, though the service never loads it.
COPY packages/client packages/client
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/copy-runtime-assets.mjs scripts/
COPY src src
RUN npm run build \
  && npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
  && rm -rf node_modules/@round-betting

FROM node:${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production APP_ENV=production HOST=0.0.0.0 PORT=3000 DATA_DIR=/var/lib/betting
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
RUN mkdir -p /var/lib/betting && chown node:node /var/lib/betting
USER node
EXPOSE 3000
# node is PID 1 with no npm or shell in between, so SIGTERM reaches the drain of docs/deployment.md.
CMD ["node", "dist/main.js"]
