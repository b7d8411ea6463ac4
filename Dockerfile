# syntax=docker/dockerfile:1
# Threadline: one image for every command (`threadline slack | teams | dev | chat | config ...`).
#
#   docker build -t threadline .                                          # extras: slack,teams
#   docker build --build-arg THREADLINE_EXTRAS=slack,teams,postgres -t threadline .
#   docker run --rm threadline --help
#
# deploy/README.md takes it from here to a running bot; tests/deploy checks this file (the
# rules below, hadolint, and these install steps run in a fresh virtualenv).

FROM python:3.11.14-slim-bookworm AS build

# The extras of pyproject.toml to install, comma-separated: a channel's server is one
# (slack, teams), a database driver another (postgres, mysql, ...), charts, files, graph.
ARG THREADLINE_EXTRAS=slack,teams
ENV VIRTUAL_ENV=/opt/threadline \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY agent_core agent_core
COPY adapters adapters
COPY bots bots
# A virtualenv the runtime stage copies whole; pip compiles the bytecode here, so nothing is
# written at run time (the root filesystem may be read-only).
RUN python -m venv "$VIRTUAL_ENV" \
    && "$VIRTUAL_ENV/bin/pip" install ".${THREADLINE_EXTRAS:+[$THREADLINE_EXTRAS]}" \
    && "$VIRTUAL_ENV/bin/threadline" --version

FROM python:3.11.14-slim-bookworm

ARG THREADLINE_EXTRAS=slack,teams
LABEL org.opencontainers.image.title="Threadline" \
      org.opencontainers.image.description="An LLM agent in Slack and Microsoft Teams threads" \
      org.opencontainers.image.licenses="Apache-2.0" \
      io.threadline.extras="${THREADLINE_EXTRAS}"

# A fixed, non-root uid (Kubernetes' runAsNonRoot checks the number) that owns the data.
RUN groupadd --system --gid 10001 threadline \
    && useradd --system --uid 10001 --gid 10001 --create-home --home-dir /home/threadline \
       --shell /usr/sbin/nologin threadline \
    && install -d -o 10001 -g 10001 -m 0750 /data
COPY --from=build /opt/threadline /opt/threadline
COPY deploy/healthcheck.py /opt/threadline/healthcheck.py

# THREADLINE_DATA_DIR: SQLite state, the demo database, shared files (a volume). PORT: the
# one port both channel servers listen on here. THREADLINE_CONTAINER lets `threadline dev
# --host 0.0.0.0` listen on the container's interfaces (its Host/Origin checks stay on).
ENV PATH=/opt/threadline/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    THREADLINE_DATA_DIR=/data \
    THREADLINE_CONTAINER=1 \
    PORT=8080 \
    MPLCONFIGDIR=/tmp/matplotlib
# threadline.toml and .env are read from the working directory: mount them here, read-only.
WORKDIR /app
VOLUME ["/data"]
USER 10001:10001
EXPOSE 8080
# SIGTERM: a bot stops taking deliveries and finishes the turns it holds, then exits.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "/opt/threadline/healthcheck.py"]
ENTRYPOINT ["threadline"]
CMD ["--help"]
