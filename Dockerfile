# One image for every process of the Procfile; the command picks it:
#   web      node dist/server/main.js   (the default)
#   worker   node dist/worker/main.js
#   release  node dist/db/setup.js
# Production builds from the public Node image; scripts/image-test.sh builds from a local one
# (--build-arg NODE_IMAGE=...) made where no registry is reachable.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY . .
RUN npm run build

FROM ${NODE_IMAGE}
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
# --ignore-scripts: the base image's node runs the app, so the npm package node's own binary
# (about 120 MB) is not fetched; the other scripts are optional (dtrace-provider) or only print.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error && npm cache clean --force
COPY --from=build /app/dist dist
# Numeric, so Kubernetes' runAsNonRoot can verify it without a passwd entry (1000 is node in node images).
USER 1000:1000
EXPOSE 3000
CMD ["node", "dist/server/main.js"]
