# The Legate image: `legate` (controller, extauth, graphql, bootstrap, crds), `legatectl`, the
# proxy-wasm filters (dist/wasm), the Helm chart and the `opa` binary (opaAuth policies). Envoy is not in it: the chart's gateway proxies
# run the official envoyproxy/envoy image.
#
#   docker build -t legate:0.1.0 .          # tag with package.json's version (the chart's appVersion)
#   docker run --rm legate:0.1.0 version
#
# No container engine exists on the machines Legate is developed on, so this recipe is reviewed but
# not built there (docs/kubernetes.md). It does what `make build` and `make opa` do, in three stages.

# Node 24 LTS, Debian 12 slim (glibc, as the prebuilt npm packages expect)
ARG NODE_IMAGE=node:24-bookworm-slim
# the Go that builds the pinned OPA (test/opa/tools/go.mod's go line)
ARG GO_IMAGE=golang:1.26-bookworm

# ---- opa: extauth compiles opaAuth policies with `opa build -t wasm` (the version scripts/opa-tool.sh pins) ----
FROM ${GO_IMAGE} AS opa
WORKDIR /opa
COPY test/opa/tools/ ./
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/opa github.com/open-policy-agent/opa \
 && /out/opa version

# ---- build: TypeScript bundles (esbuild) and the AssemblyScript filters ----
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN for filter in bearer-check graphql-check; do \
      npx asc "extensions/wasm/$filter/index.ts" --target release -o "dist/wasm/$filter.wasm" || exit 1; \
    done \
 && node scripts/build.mjs

# ---- runtime: the bundles, production dependencies, nothing else ----
FROM ${NODE_IMAGE}
ENV NODE_ENV=production
# legate finds dist/wasm and the chart from its working directory
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin/ ./bin/
COPY --from=build /src/dist/legate.js /src/dist/legatectl.js ./dist/
COPY --from=build /src/dist/chunks/ ./dist/chunks/
COPY --from=build /src/dist/wasm/*.wasm ./dist/wasm/
# the web console's pages (legate console)
COPY --from=build /src/dist/console/ ./dist/console/
# for `legatectl install` run from the image
COPY install/helm/legate/ ./install/helm/legate/
# extauth's opaAuth compiler (a static binary); extauth finds it at $LEGATE_OPA
COPY --from=opa /out/opa /usr/local/bin/opa
ENV LEGATE_OPA=/usr/local/bin/opa
# not root; the chart runs it as the same user (securityContext.runAsUser)
USER 10101:10101
ENTRYPOINT ["node", "/app/bin/legate.js"]
CMD ["--help"]
