"""Error types shared by the core: every error names a file, a key path or line, and what was expected."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Issue:
    file: str
    line: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "")
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class GpufleetError(Exception):
    """Base class: the message is meant for the user as it is."""


class ModelError(GpufleetError):
    """The inventory does not describe a valid fleet; carries every issue found, not only the first."""

    def __init__(self, issues: list[Issue]):
        self.issues = sorted(set(issues), key=lambda i: (i.file, i.line or 0, i.path, i.message))
        n = len(self.issues)
        head = f"{n} problem{'s' if n != 1 else ''} in the fleet inventory:"
        super().__init__("\n".join([head, *(f"  - {i}" for i in self.issues)]))
