# memcached-gitops: the CLI (render, validate, reconcile, krm, argocd-generate) as the entrypoint.
# Build and push:  docker build -t REGISTRY/memcached-gitops:TAG . && docker push REGISTRY/memcached-gitops:TAG
# then point kustomize/components/image at it (docs/reference/installing.md): the image is published nowhere.
# The base image by digest (a tag can be pushed again; a digest cannot), for both stages. Refresh it with
#   docker buildx imagetools inspect python:3.11.11-slim-bookworm --format '{{.Manifest.Digest}}'
ARG BASE=python:3.11.11-slim-bookworm@sha256:081075da77b2b55c23c088251026fb69a7b2bf92471e491ff5fd75c192fd38e5
FROM $BASE AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY requirements/runtime.txt requirements/image.txt ./requirements/
COPY src ./src
COPY foundation ./foundation
COPY render ./render
COPY schemas ./schemas
COPY reconciler ./reconciler
# the [cluster] extra (the kubernetes client, which reconcile and diff need) and the [kustomize] extra
# (kubectl, whose embedded kustomize builds the Argo CD plugin's overlays), every wheel as locked and
# hash-checked in requirements/image.txt; the package itself built with the locked setuptools
RUN pip install --no-cache-dir --require-hashes -r requirements/image.txt \
    && pip wheel --no-cache-dir --require-hashes --wheel-dir /wheels -r requirements/image.txt \
    && pip wheel --no-cache-dir --no-deps --no-build-isolation --wheel-dir /wheels .

FROM $BASE
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links=/wheels 'memcached-gitops[cluster,kustomize]' \
    && rm -rf /wheels \
    && python -m compileall -q /usr/local/lib/python3.11/site-packages
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER 65532:65532
ENTRYPOINT ["memcached-gitops"]
CMD ["--help"]
