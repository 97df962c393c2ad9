# payemu in a container: the emulator, its dashboard and the hosted payment page.
#
#   docker build -t payemu .
#   docker run --rm -p 8080:8080 payemu
#   docker run --rm -p 8080:8080 -v "$PWD/my-scenarios:/scenarios:ro" payemu
#
# Scenario files (*.yaml, *.yml) mounted at /scenarios are loaded after the built-in
# test cards; the directory ships empty, so the image also starts without a mount.
# Other options: override the command, e.g. `docker run -p 9000:9000 payemu payemu serve
# --host 0.0.0.0 --port 9000 --seed 42 --scenarios /scenarios`. The health check follows
# whatever port payemu serves: `payemu serve` writes it to $PAYEMU_READY_FILE once it
# answers requests, and the check asks that port.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PAYEMU_READY_FILE=/tmp/payemu-ready.json

WORKDIR /build
COPY pyproject.toml README.md LICENSE ./
COPY emulator ./emulator
COPY schemas ./schemas
COPY scenarios ./scenarios
RUN pip install . \
    && rm -rf /build \
    && useradd --system --uid 10001 --create-home --shell /usr/sbin/nologin payemu \
    && mkdir /scenarios

USER payemu
WORKDIR /home/payemu
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=5s --retries=3 \
    CMD ["python", "-c", "import json, os, urllib.request; port = json.load(open(os.environ['PAYEMU_READY_FILE']))['port']; urllib.request.urlopen(f'http://127.0.0.1:{port}/_emulator/health', timeout=2)"]
CMD ["payemu", "serve", "--host", "0.0.0.0", "--port", "8080", "--scenarios", "/scenarios"]
