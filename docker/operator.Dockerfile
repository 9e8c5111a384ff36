# syntax=docker/dockerfile:1
# The Forescale operator image: `forescale operator` with the CPU build of torch.
#
#   docker build -f docker/operator.Dockerfile -t REGISTRY/forescale-operator:0.1.0 .
#
# Build from the repository root. The forecaster runs on CPU, so the image
# takes torch's CPU wheel: a plain `torch` requirement would pull the
# multi-GB CUDA build. See docs/install.md for pushing it and pointing the chart at it.

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/forescale
ENV PATH=/opt/forescale/bin:$PATH
# torch first and from the CPU index, in its own layer: it is most of the image
# and changes far less often than the project.
RUN pip install --no-cache-dir --index-url "${TORCH_INDEX_URL}" "torch==${TORCH_VERSION}"
WORKDIR /src
COPY pyproject.toml README.md ./
COPY cli/ cli/
COPY operator/ operator/
COPY predictor/ predictor/
COPY model-server/ model-server/
COPY sim/ sim/
COPY devcluster/ devcluster/
COPY stress/ stress/
COPY profiles/ profiles/
# A regular (not editable) install; the torch pin above already satisfies the project's.
RUN pip install --no-cache-dir . \
    && python -c "import forescale_operator, forescale_predictor"

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="forescale-operator" \
      org.opencontainers.image.description="Forescale: predictive autoscaling and incident failover for GPU model serving" \
      org.opencontainers.image.licenses="Apache-2.0"
# A fixed numeric user so that Kubernetes can check runAsNonRoot without a passwd lookup.
RUN groupadd --system --gid 10001 forescale \
    && useradd --system --uid 10001 --gid forescale --no-create-home --home-dir /tmp --shell /usr/sbin/nologin forescale
COPY --from=build /opt/forescale /opt/forescale
# The chart mounts a writable /tmp; everything else is read-only at run time.
# One BLAS thread: the LSTM is small, and more threads only fight over the pod's CPU limit.
ENV PATH=/opt/forescale/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    MPLCONFIGDIR=/tmp/matplotlib \
    HF_HUB_OFFLINE=1 \
    OMP_NUM_THREADS=1 \
    FORESCALE_METRICS_PORT=8080 \
    FORESCALE_HEALTH_PORT=8081
USER 10001:10001
EXPOSE 8080 8081
ENTRYPOINT ["forescale", "operator"]
CMD ["-A"]
