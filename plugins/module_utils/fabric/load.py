"""Read a fabric input of any kind into a :class:`Fabric`: find its kind, hand it to its parser.

The parsers (``ibnetdiscover``, ``labels``, ``file``) know only the model (``fabric/model.py``);
this module alone knows every parser, so nothing imports back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

from ansible_collections.gpufleet.core.plugins.module_utils.fabric.file import parse_fabric_yaml
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.ibnetdiscover import parse_default, parse_ports
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.labels import parse_nodes_text
from ansible_collections.gpufleet.core.plugins.module_utils.fabric.model import Fabric, FabricError, merge_into

# kind -> parser(text, source); "auto" detects the kind from the first lines
PARSERS: dict[str, Callable[[str, str], Fabric]] = {
    "ibnetdiscover": parse_default,
    "ibnetdiscover-ports": parse_ports,
    "labels": parse_nodes_text,
    "file": parse_fabric_yaml,
}

_PATH_SUFFIXES = (".out", ".txt", ".yaml", ".yml", ".json", ".ibnetdiscover", ".ibnd")

KINDS = ("auto", "ibnetdiscover", "ibnetdiscover-ports", "labels", "file")


def _read(path_or_text: str | Path) -> tuple[str, str]:
    if isinstance(path_or_text, Path):
        p = path_or_text
    elif (
        "\n" not in path_or_text
        and len(path_or_text) < 4096
        and (
            Path(path_or_text).is_file()
            or (
                not any(c.isspace() for c in path_or_text)
                and not path_or_text.startswith(("{", "["))
                and ("/" in path_or_text or path_or_text.endswith(_PATH_SUFFIXES))
            )
        )
    ):
        p = Path(path_or_text)
    else:
        return path_or_text, "<text>"
    try:
        data = p.read_bytes()
        return data.decode("utf-8"), str(p)
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise FabricError(
            f"not UTF-8 text (byte {e.start}); node descriptions must be ASCII: fix the host's NodeDescription"
            " (rdma-ndd) and run discover again",
            file=str(p),
            line=line,
        ) from None
    except IsADirectoryError:
        raise FabricError("is a directory, expected a fabric file", file=str(p)) from None
    except FileNotFoundError:
        raise FabricError("fabric file not found", file=str(p)) from None
    except OSError as e:
        raise FabricError(f"cannot read fabric file: {e.strerror or e}", file=str(p)) from None


def detect_kind(text: str) -> str:
    """Guess the input format from its first meaningful lines."""
    for raw in text.splitlines()[:400]:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(
            (
                "Switch\t",
                "Switch ",
                "Ca\t",
                "Ca ",
                "Rt\t",
                "vendid=",
                "devid=",
                "sysimgguid=",
                "switchguid=",
                "caguid=",
                "rtguid=",
            )
        ):
            return "ibnetdiscover"
        if re.match(r"^(SW|CA|RT)\s+\d+\s+\d+\s+0x[0-9a-fA-F]+", line):
            return "ibnetdiscover-ports"
        if line.startswith(("apiVersion:", "kind:", "{", "items:")):
            return "labels"
        if line.startswith(("switches:", "blocks:", "domains:", "---")):
            return "file"
        break
    raise FabricError(
        "cannot tell the fabric format (expected ibnetdiscover output, -p ports output, "
        "a Kubernetes Node list or a fabric YAML file); pass kind="
    )


def load_fabric(path_or_text: str | Path | Iterable[str | Path], kind: str = "auto") -> Fabric:
    """Parse one fabric input (a path or the text itself) into a :class:`Fabric`.

    ``kind``: ``auto`` | ``ibnetdiscover`` | ``ibnetdiscover-ports`` | ``labels`` | ``file``.
    A list of inputs (e.g. one ibnetdiscover dump per rail subnet) is merged into one fabric.
    """
    if kind not in KINDS:
        raise FabricError(f"unknown fabric kind {kind!r}; expected one of {', '.join(KINDS)}")
    if not isinstance(path_or_text, str | Path):
        items = list(path_or_text)
        if not items:
            raise FabricError("no fabric input given")
        merged = Fabric(source=", ".join(str(i) for i in items))
        for item in items:
            merge_into(merged, load_fabric(item, kind))
        return merged.finish()
    text, source = _read(path_or_text)
    for lineno, line in enumerate(text.splitlines(), 1):  # undecodable command output (surrogates)
        if any("\udc80" <= ch <= "\udcff" or ch == "\ufffd" for ch in line):
            raise FabricError(
                "not UTF-8 text; node descriptions must be ASCII: fix the host's NodeDescription"
                " (rdma-ndd) and run discover again",
                file=source,
                line=lineno,
            )
    if kind == "auto":
        if not text.strip():
            raise FabricError("the fabric snapshot is empty; run discover again", file=source)
        if "\x00" in text:
            raise FabricError("the fabric snapshot is binary, not ibnetdiscover text; run discover again", file=source)
        try:
            k = detect_kind(text)
        except FabricError as exc:
            raise FabricError(
                f"{exc.message.removesuffix('; pass kind=')}: check the file, or the fabric source"
                " (gpufleet_clusters[].fabric.source, or the kind option of the fabric_facts module)",
                file=source,
            ) from None
    else:
        k = kind
    return PARSERS[k](text, source)
