# The floe worker image (docker-compose.yml service floe-worker). TypeScript runs through tsx,
# as in development; the worker bundles workflows with the SDK's webpack at start.
FROM node:20-bookworm-slim

WORKDIR /app
ENV NODE_ENV=production \
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED=true

COPY package.json package-lock.json ./
# Runtime dependencies only (tsx is one); native modules (better-sqlite3) take their prebuilds.
RUN npm ci --omit=dev && npm cache clean --force

COPY tsconfig.json ./
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
COPY stack ./stack
COPY workers ./workers
COPY workflows ./workflows

USER node
CMD ["npx", "tsx", "cli/main.ts", "worker"]
