"""What the behaviour modules (checks, simulator, failover, engine, eWallet) need of the
running emulator, as a Protocol: the scenario book, the gateway catalog, the schema's
currencies, the settings, the payment pages' session index and a schema compiler.

:class:`emulator.runtime.Runtime` is one; a test can pass any object with these members.
The behaviour modules import this module, never the runtime (which sits above them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    from emulator.config import Settings
    from emulator.errors import FieldErrors
    from emulator.gateways.catalog import Catalog
    from emulator.payments.ewallet.sessions import SessionIndex
    from emulator.payments.tenants import Tenant, TenantRegistry
    from emulator.scenarios import ScenarioBook


class Validator(Protocol):
    """A compiled JSON Schema (:class:`emulator.http.validation.Compiled`)."""

    def is_valid(self, value: Any) -> bool: ...

    def errors(self, value: Any, root: str | None = "body") -> list[FieldErrors]: ...

    @property
    def normalize(self) -> Callable[[Any], Any]:
        """A valid value in canonical form (enum spellings and the like)."""
        ...


class Compiler(Protocol):
    """Compiles a JSON Schema once (:class:`emulator.http.validation.SchemaCompiler`)."""

    def compile(self, schema: Any) -> Validator: ...


class Services(Protocol):
    """The shared services of one running emulator."""

    @property
    def settings(self) -> Settings: ...

    @property
    def catalog(self) -> Catalog: ...

    @property
    def scenarios(self) -> ScenarioBook: ...

    @property
    def currencies(self) -> Mapping[str, str]: ...

    @property
    def tenants(self) -> TenantRegistry: ...

    @property
    def session_index(self) -> SessionIndex[Tenant]: ...

    @property
    def compiler(self) -> Compiler: ...


class DocumentedOperation(Protocol):
    """A documented operation, as far as checking a body goes (:class:`emulator.http.openapi.Operation`)."""

    @property
    def body(self) -> Validator | None: ...
