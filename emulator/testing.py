"""pytest plugin entry point (fixtures arrive with the CI-tooling work)."""
