"""The grammar of every free string of the fleet model, as JSON-Schema patterns, and the validator
that applies them with ECMA-262 (whole-string) semantics.

JSON Schema patterns are ECMA-262 regular expressions: without the multiline flag, ``$`` matches
only at the end of the input. Python's ``re.search`` (what ``jsonschema`` uses) lets ``$`` match
before a trailing newline, so ``"research\\n"`` passed ``^[a-z]...$``. :data:`VALIDATOR` checks
``pattern`` with ``$`` read as ``\\Z`` (end of string): the published schema and the Python check
accept exactly the same strings. Every string that reaches a file name, a Kubernetes object name,
slurm.conf or a URL has a pattern here; see docs/threat-model.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from functools import cache
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.deps import missing
from ansible_collections.gpufleet.core.plugins.module_utils.model.tenant_values import quantity

try:
    import jsonschema
    from jsonschema.exceptions import ValidationError
except ImportError:  # importing works without it; the first use raises a clear error
    jsonschema = missing("jsonschema", "jsonschema")
    ValidationError = jsonschema.ValidationError

# DNS label (RFC 1123), max 40: tenant, pool, cluster, fleet and namespace names (they are glued
# into longer generated names: vc-<tenant>, <cluster>-<component>, tenant-<tenant>-isolation, ...).
NAME = r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$"
# Kubernetes namespace (DNS label, max 63).
NAMESPACE = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
# Slurm PartitionName: no whitespace, '=', '#', ',' or quotes (they would start a new option).
PARTITION = r"^[A-Za-z][-_A-Za-z0-9]{0,62}$"
# Slurm time (slurm.conf MaxTime): minutes, minutes:seconds, hours:minutes:seconds, days-hours,
# days-hours:minutes, days-hours:minutes:seconds, or UNLIMITED / INFINITE.
SLURM_TIME = r"^(UNLIMITED|INFINITE|[0-9]{1,7}(:[0-9]{1,2}){0,2}|[0-9]{1,5}-[0-9]{1,2}(:[0-9]{1,2}){0,2})$"
# Kubernetes label value (also a Slurm node Feature: gpu_product becomes one).
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$"
# Kubernetes label key: optional DNS-subdomain prefix and '/', then a name.
LABEL_KEY = (
    r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
# A path relative to the inventory or the repository: no leading '/', no '.' or '..' part, no
# hidden part, no whitespace or control characters.
REL_PATH = r"^[A-Za-z0-9_][-A-Za-z0-9_.]*(/[A-Za-z0-9_][-A-Za-z0-9_.]*)*$"
# An absolute path on an NFS server (no '..').
ABS_PATH = r"^(/[A-Za-z0-9_][-A-Za-z0-9_.]*)+$"
HOSTNAME = r"^[A-Za-z0-9]([-A-Za-z0-9.]{0,251}[A-Za-z0-9])?$"
QUANTITY = r"^[0-9]{1,9}(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$"
HTTPS_URL = r"^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[-A-Za-z0-9._~/%]*)?$"
API_URL = r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[-A-Za-z0-9._~/%]*)?$"
TOKEN = r"^\S{1,512}$"  # repo URLs, chart names, versions, kubeconfig paths: one token, no controls
GIT_REF = r"^[A-Za-z0-9][-A-Za-z0-9_./]{0,199}$"
REMOTE = r"^[A-Za-z0-9][-A-Za-z0-9_.]{0,99}$"
ENV_VAR = r"^[A-Za-z_][A-Za-z0-9_]{0,99}$"
PROJECT = r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+$"
HOSTLIST = r"^[-A-Za-z0-9_.\[\],*?]{1,1000}$"
TEXT = r"^[^\x00-\x1f\x7f]{0,500}$"  # one line of free text (descriptions)
# A CODEOWNERS owner: @user, @org/team, or an e-mail address (no '#', which starts a comment there)
CODE_OWNER = (
    r"^(@[A-Za-z0-9](-?[A-Za-z0-9]){0,38}(/[A-Za-z0-9][-A-Za-z0-9_.]{0,99})?"
    r"|[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)+)$"
)
ORG = r"^[A-Za-z0-9](-?[A-Za-z0-9_.]){0,38}$"  # a GitHub organisation or GitLab group

# Names a tenant must not give to namespaces inside its vCluster (the renderer creates 'slurm'
# there; the others are Kubernetes' and vCluster's own).
SYSTEM_NAMESPACE_PREFIXES = ("kube-",)
SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease", "argocd"})


def is_system_namespace(name: str) -> bool:
    return name in SYSTEM_NAMESPACES or name.startswith(SYSTEM_NAMESPACE_PREFIXES)


def pattern(regex: str, description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "pattern": regex, "description": description, **extra}


@cache
def ecma(regex: str) -> re.Pattern[str]:
    """Compile a JSON-Schema pattern with ECMA-262 ``$`` (end of input only, never before a newline)."""
    return re.compile(re.sub(r"(?<!\\)\$", r"\\Z", regex))


def _pattern(validator: Any, patrn: str, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not ecma(patrn).search(instance):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(validator: Any, props: dict[str, Any], instance: Any, schema: dict[str, Any]) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for patrn, subschema in props.items():
        for k, v in instance.items():
            if isinstance(k, str) and ecma(patrn).search(k):
                yield from validator.descend(v, subschema, path=k, schema_path=patrn)


def _max_quantity(validator: Any, maximum: str, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    """``maxQuantity`` (gpufleet keyword): a Kubernetes quantity string no larger than ``maximum``."""
    if not validator.is_type(instance, "string"):
        return
    got, top = quantity(instance), quantity(maximum)
    if got is None or top is None or got > top:
        yield ValidationError(f"{instance!r} is above the allowed maximum {maximum!r}")


def _is_integer(checker: Any, instance: Any) -> bool:
    """Integers are ints: not bools, not floats (JSON Schema counts 1.0 as an integer; YAML ``1.0``
    would render as ``1.0``)."""
    return isinstance(instance, int) and not isinstance(instance, bool)


def _is_number(checker: Any, instance: Any) -> bool:
    """Finite numbers only (no inf/nan), never bools."""
    return (isinstance(instance, int) and not isinstance(instance, bool)) or (
        isinstance(instance, float) and math.isfinite(instance)
    )


def validator_for(schema: dict[str, Any]) -> Any:
    base = jsonschema.Draft202012Validator
    types = base.TYPE_CHECKER.redefine_many({"integer": _is_integer, "number": _is_number})
    cls = jsonschema.validators.extend(
        base,
        {"pattern": _pattern, "patternProperties": _pattern_properties, "maxQuantity": _max_quantity},
        type_checker=types,
    )
    return cls(schema)


def fullmatch(regex: str, value: str) -> bool:
    return bool(ecma(regex).search(value))
