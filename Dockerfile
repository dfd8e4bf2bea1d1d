# The floe worker image (docker-compose.yml service floe-worker). TypeScript runs through tsx,
# as in development; the worker bundles workflows with the SDK's webpack at start.
FROM node:24-bookworm-slim

WORKDIR /app
ENV NODE_ENV=production

COPY package.json package-lock.json ./
# Runtime dependencies only (tsx is one). The image's own Node is 24, so the node-linux-*
# runtime package (for machines with an older Node) is removed again.
RUN npm ci --omit=dev && rm -rf node_modules/node-linux-* node_modules/.bin/node && npm cache clean --force

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
