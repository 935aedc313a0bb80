"""Rendered files held compressed until they are written (``render.tree.render_fleet``).

A fleet rendered in one process holds every cluster's rendered bytes until the tree is written as a
whole (atomically, render/writer.py), while it parses one cluster at a time: the bytes of twenty
clusters outweigh the parse of one. Kept zlib-compressed (level 1: rendered YAML shrinks about tenfold
and compresses at hundreds of MB/s), a file is inflated only when it is read (the plan, the manifest
digests and the write each read it once). The mapping reads like ``dict[str, bytes]`` in its order.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping, MutableMapping

LEVEL = 1


class PackedFiles(MutableMapping[str, bytes]):
    """Relative path -> bytes, each value stored compressed."""

    def __init__(self, files: Mapping[str, bytes] | None = None) -> None:
        self._z: dict[str, bytes] = {}
        if files is not None:
            self.update(files)

    def __getitem__(self, rel: str) -> bytes:
        return zlib.decompress(self._z[rel])

    def __setitem__(self, rel: str, data: bytes) -> None:
        self._z[rel] = zlib.compress(data, LEVEL)

    def __delitem__(self, rel: str) -> None:
        del self._z[rel]

    def __iter__(self) -> Iterator[str]:
        return iter(self._z)

    def __len__(self) -> int:
        return len(self._z)

    def __contains__(self, rel: object) -> bool:
        return rel in self._z

    def update(self, other: object = (), /, **kw: bytes) -> None:  # type: ignore[override]
        if isinstance(other, PackedFiles) and not kw:  # already compressed: taken as they are
            self._z.update(other._z)
        else:
            super().update(other, **kw)  # type: ignore[arg-type]

    def sorted(self) -> PackedFiles:
        """The same files in path order (nothing inflated)."""
        out = PackedFiles()
        out._z = dict(sorted(self._z.items()))
        return out

    def packed_size(self) -> int:
        return sum(len(z) for z in self._z.values())
