# repack-sidecar: runs beside volcano-scheduler in its pod (loopback gRPC).
FROM python:3.11-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends gcc && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY proto ./proto
COPY ext ./ext
COPY manifests/crd ./manifests/crd
COPY sidecar ./sidecar
RUN pip wheel --no-cache-dir -w /wheels .

FROM python:3.11-slim
RUN useradd --uid 65532 --no-create-home repack
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER 65532
# gRPC on loopback; metrics for Prometheus. The scheduler itself uses 8080 and 11251.
EXPOSE 9464
ENTRYPOINT ["repack-sidecar", "--log-format", "json"]
CMD ["serve", "--host", "127.0.0.1", "--port", "50151", "--metrics-port", "9464"]
