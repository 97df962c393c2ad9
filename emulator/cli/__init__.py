"""The command line: payemu serve and its subcommands, the banner, the access log, ports, the
readiness file and the shared-server pool.
"""
