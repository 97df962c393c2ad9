# HAProxy from Debian's packages (2.6 on Debian 12), the version payemu's tests run.
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends haproxy \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /run/haproxy \
    && chown haproxy:haproxy /run/haproxy
USER haproxy
EXPOSE 8080
# -W: master-worker; -db: stay in the foreground, logging to stdout
CMD ["haproxy", "-W", "-db", "-f", "/etc/haproxy/haproxy.cfg"]
