# The floe worker image (docker-compose.yml service floe-worker): the compiled build (`npm run
# build`: dist/ with the Temporal workflow bundle made at image build, dist/workflow-bundle.js), run
# by plain node as the unprivileged `node` user. No TypeScript compiler, tsx or webpack runs at start.

# ---- build: all dependencies, compile, bundle the workflows
FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# The image's own Node is 24, so the node-linux-* runtime package (for machines with an older
# Node) is removed again.
RUN npm ci && rm -rf node_modules/node-linux-* node_modules/.bin/node
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.ts ./scripts/build.ts
COPY activities ./activities
COPY cli ./cli
COPY client ./client
COPY config ./config
COPY contract ./contract
COPY demo ./demo
COPY examples ./examples
COPY iceberg ./iceberg
COPY ingest ./ingest
COPY maintenance ./maintenance
COPY observability ./observability
COPY stack ./stack
COPY table ./table
COPY workers ./workers
COPY workflows ./workflows
RUN npm run build

# ---- runtime: production dependencies and dist/ only
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && rm -rf node_modules/node-linux-* node_modules/.bin/node && npm cache clean --force
COPY --from=build /src/dist ./dist
COPY bin ./bin
COPY examples ./examples
# FLOE_HOME: the worker's cache directory (unused with the prebuilt bundle), writable by `node`.
ENV FLOE_HOME=/home/node/.cache/floe
USER node
# 8 MB semi-spaces: the young generation stays small (workers/process.ts WORKER_V8_FLAGS, bin/floe).
CMD ["node", "--max-semi-space-size=8", "dist/cli/main.js", "worker"]
