"""What the behaviour modules need of the running emulator, as a Protocol, so they never
import the runtime (which sits above them); a test can pass any object with these members."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    from emulator.catalog.catalog import Catalog
    from emulator.domain.config import Settings
    from emulator.domain.errors import FieldErrors
    from emulator.scenarios import ScenarioBook
    from emulator.stores.ewallet_sessions import SessionIndex
    from emulator.tenants.tenants import Tenant, TenantRegistry


class Validator(Protocol):
    def is_valid(self, value: Any) -> bool: ...

    def errors(self, value: Any, root: str | None = "body") -> list[FieldErrors]: ...

    @property
    def normalize(self) -> Callable[[Any], Any]: ...


class Compiler(Protocol):
    def compile(self, schema: Any) -> Validator: ...


class Services(Protocol):
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
    @property
    def body(self) -> Validator | None: ...
