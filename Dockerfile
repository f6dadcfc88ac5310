# One image for both processes:
#   fhpa webhook serve --cert-dir /certs      (the admission webhook, manifests/webhook)
#   fhpa controller run                       (the controller, manifests/controller)
# Slim Python base, dependencies in a separate layer, non-root user, tzdata for cron time zones.
# Dependencies install at the exact versions the tests ran with (constraints.txt); the simulator's
# plotting stack (the `sim` extra) stays out. Pin the base by digest when you build for production:
#   docker build --build-arg BASE=python:3.11-slim-bookworm@sha256:<digest> -t <registry>/federated-hpa:<tag> .
# (the digest of the tag you tested; this repository cannot look it up for you, it has no registry access)
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE} AS build
WORKDIR /src
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY pyproject.toml README.md constraints.txt ./
COPY fhpa ./fhpa
COPY fhpa_api ./fhpa_api
COPY fhpa_logs ./fhpa_logs
COPY controller ./controller
COPY webhook ./webhook
COPY certs ./certs
COPY simulator ./simulator
RUN python -m venv /opt/fhpa \
 && /opt/fhpa/bin/pip install -c constraints.txt . \
 && /opt/fhpa/bin/fhpa --help >/dev/null \
 && /opt/fhpa/bin/pip uninstall -y pip

FROM ${BASE}
# tzdata: the system zone database, beside the tzdata wheel that zoneinfo falls back to
RUN apt-get update \
 && apt-get install -y --no-install-recommends tzdata \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 fhpa \
 && useradd --system --uid 10001 --gid fhpa --home-dir /nonexistent --shell /usr/sbin/nologin fhpa
COPY --from=build /opt/fhpa /opt/fhpa
ENV PATH=/opt/fhpa/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    TZ=UTC
USER 10001:10001
EXPOSE 8080 8443
ENTRYPOINT ["fhpa"]
CMD ["controller", "run"]
