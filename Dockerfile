# syntax=docker/dockerfile:1
# dialscore on CPU: `docker build -t dialscore:2026.11.1 .` (docs/deploy.md).
# Two stages: dependencies are installed in a virtual environment in the first, and only that
# environment (pip removed from it), the service code and the committed model store reach the final
# image (no pip, no compilers, no torch, no training code). OpenVINO's runtime (requirements.txt) comes
# with it: `auto` runs the sentence encoders on it on an x86-64 CPU (any vendor) with bf16 arithmetic
# (AMX, AVX512_BF16) or AVX-512 VNNI, else on ONNX Runtime's CPU EP; it compiles the committed ONNX files
# at start-up into DIALSCORE_OPENVINO_CACHE_DIR, which the workers and a restarted container share.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
COPY requirements.txt constraints.txt /tmp/
RUN /opt/venv/bin/pip install --no-compile -r /tmp/requirements.txt -c /tmp/constraints.txt \
    && /opt/venv/bin/pip check \
    && /opt/venv/bin/python -c "import onnxruntime, openvino, tokenizers, scipy, flask, gunicorn" \
    && /opt/venv/bin/python -m pip uninstall -q -y pip \
    && /opt/venv/bin/python -m compileall -q /opt/venv/lib

FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="dialscore" \
      org.opencontainers.image.description="Scoring service for open-domain dialogue (ONNX Runtime, CPU)" \
      org.opencontainers.image.licenses="MIT"
RUN groupadd --system --gid 10001 dialscore \
    && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home \
       --shell /usr/sbin/nologin dialscore
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY service/ /app/service/
COPY model_store/ /app/model_store/
# Byte-code compiled now: the root filesystem is read-only at run time. OpenVINO's compiled-model cache
# is the service user's (a volume over it in Kubernetes, k8s/base/deployment.yaml).
RUN python -m compileall -q /app/service \
    && mkdir -p /var/cache/dialscore/openvino \
    && chown 10001:10001 /var/cache/dialscore/openvino
# HOME=/tmp: gunicorn and Python look there for caches; /tmp is the one writable mount (emptyDir).
# DIALSCORE_HOST=0.0.0.0 is beyond loopback: the server starts only with DIALSCORE_API_TOKEN or an
# explicit DIALSCORE_OPEN_ACCESS=true given at run time (service/startup_checks.py), never open by default.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    DIALSCORE_HOST=0.0.0.0 \
    DIALSCORE_PORT=8000 \
    DIALSCORE_MODEL_STORE=/app/model_store \
    DIALSCORE_PROVIDERS=auto \
    DIALSCORE_OPENVINO_CACHE_DIR=/var/cache/dialscore/openvino
USER 10001:10001
EXPOSE 8000
# Ready, not only alive: a store that failed to load answers /healthz but can score nothing.
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('DIALSCORE_PORT', '8000') + '/readyz', timeout=4)"]
STOPSIGNAL SIGTERM
CMD ["python", "-m", "service"]
