"""The two ways :class:`~recallwatch.stores.lancedb.store.LanceStore` holds its table: read through
pylance (:class:`~recallwatch.stores.lancedb.read.ReadTable`, every read) and, only when needed,
through ``lancedb`` (to write, build an index or search one). Both follow the latest version unless
the store is a read-only view of a past one."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from recallwatch.errors import StoreError
from recallwatch.stores.failures import engine_message
from recallwatch.stores.lancedb.read import ReadTable

if TYPE_CHECKING:
    import pyarrow as pa
    from lancedb.db import DBConnection
    from lancedb.table import Table as LanceTable

__all__ = ["TableHandle"]


class TableHandle:
    """One table of a LanceDB directory, at version ``pinned`` (None: the latest)."""

    def __init__(self, uri: str, path: Path, name: str, pinned: int | None,
                 errors: tuple[type[BaseException], ...]) -> None:
        self.uri, self.path, self.name, self.pinned = uri, path, name, pinned
        self._errors = errors  # what LanceDB and pylance raise
        self._connection: DBConnection | None = None  # lancedb's, opened when first needed
        self._engine_tbl: LanceTable | None = None
        self._tbl: ReadTable | None = None

    @property
    def db(self) -> DBConnection:
        if self._connection is None:
            import lancedb

            # connect() creates a missing directory: only reached when it exists or may be made
            self._connection = lancedb.connect(str(self.path))
        return self._connection

    def table_names(self) -> list[str]:
        names: list[str] = []
        token: str | None = None
        while True:
            page = self.db.list_tables(page_token=token)
            names.extend(page.tables)
            token = page.page_token
            if not token:
                return sorted(names)

    def open(self, version: int | None = None) -> ReadTable | None:
        """The table at ``version`` (default the latest) read through pylance, None when the
        table does not exist."""
        location = self.path / f"{self.name}.lance"
        if not location.is_dir():
            return None
        try:
            return ReadTable(location, version)
        except self._errors as exc:
            if version is not None and "not found" in str(exc).lower():
                raise StoreError(f"{self.uri}: version {version} does not exist "
                                 "(or was cleaned up)") from None
            raise StoreError(f"{self.uri}: cannot open table {self.name!r}: "
                             f"{engine_message(exc)}") from None

    def create(self, data: pa.Table) -> None:
        """Create the table with its first rows."""
        self._engine_tbl = self.db.create_table(self.name, data=data)

    def engine(self) -> LanceTable:
        """The table through lancedb, at this version: to write, index or ANN-search."""
        if self._engine_tbl is None:
            try:
                self._engine_tbl = self.db.open_table(self.name, version=self.pinned)
            except ValueError as exc:
                raise StoreError(f"{self.uri}: cannot open table {self.name!r}: "
                                 f"{engine_message(exc)}") from None
        elif self.pinned is None:
            self._engine_tbl.checkout_latest()  # type: ignore[no-untyped-call]
        return self._engine_tbl

    def table(self, *, latest: bool = False) -> ReadTable | None:
        """The table read through pylance (the latest version when ``latest``, even on a view)."""
        if self._tbl is None:
            self._tbl = self.open(self.pinned)
        elif self.pinned is None:
            # Another process may have written since: follow the latest version.
            self._tbl.checkout_latest()
        if latest and self.pinned is not None:
            return self.open()
        return self._tbl

    def close(self) -> None:
        self._tbl = None
        self._engine_tbl = None
