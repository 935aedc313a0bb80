"""Every container image the fleet pulls, and its redirection to the site's registry.

:data:`IMAGES` is the one table: for each chart, the values key of each image it pulls (main
containers, sidecars, init containers, images a controller deploys), how that key names the image
and the upstream reference at the pinned chart version. ``gpufleet_image_mirror`` (a registry path,
e.g. ``registry.site.internal/mirror``) redirects every one of them to
``<mirror>/<upstream registry>/<path>``: the render writes the keys into the chart's values, and the
report (IMAGES.md beside the tree) lists what is pulled from where. Every chart's images are read off
its pinned release (tests/unit/.../test_images_real_charts.py templates each one).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ansible_collections.gpufleet.core.plugins.module_utils.versions import CHARTS
from ansible_collections.gpufleet.core.plugins.module_utils.versions import IMAGES as TAGS


@dataclass(frozen=True)
class Image:
    chart: str  # versions.CHARTS key
    path: tuple[str, ...]  # values key of the image's settings
    style: str  # how the values name it: see redirect()
    upstream: str  # the reference the chart pulls without a mirror
    pin: bool = False  # the chart's default tag floats (``latest``): the render sets the upstream's tag


def _i(chart: str, path: str, style: str, upstream: str, pin: bool = False) -> Image:
    return Image(chart, tuple(path.split(".")) if path else (), style, upstream, pin)


_ENVOY = "v1.37.5-1782911245-7cffc778c923f68a77954a53b1a98d6b5353f004"
_CERT_MANAGER = CHARTS["cert_manager"]["version"]  # the chart's appVersion, its images' default tag
_KUEUE = "v" + CHARTS["kueue"]["version"]  # the released chart's image tag (its packaging sets it)
# images whose tag the chart takes from its appVersion (gpu-operator, slurm-operator) or version (vcluster)
_GPU_OPERATOR = CHARTS["gpu_operator"]["version"]
_SLINKY = CHARTS["slurm_operator"]["version"]
_VCLUSTER = CHARTS["vcluster"]["version"]
_BRIDGE = CHARTS["slurm_bridge"]["version"]
_NFD = "registry.k8s.io/nfd/node-feature-discovery:v0.19.0"
_MARIADB_OPERATOR = f"ghcr.io/mariadb-operator/mariadb-operator:{CHARTS['mariadb_operator']['version']}"
# the slurm chart's log and config sidecars default to alpine:latest: pinned to one release
_ALPINE = "docker.io/library/alpine:3.20.3"
LOGIN = f"ghcr.io/slinkyproject/login:{TAGS['slurm']}"  # gpufleet's own Jobs run the Slinky login image
# style: "repository" (registry in image.repository), "registry" (image.registry + image.repository),
# "directory" (gpu-operator: repository is registry/dir, image the name), "base" (csi-driver-nfs:
# image.baseRepo + repository), "registry" (vCluster: image.registry + image.repository; with a mirror
# vCluster's defaultImageRegistry replaces every registry, the chart's (_helper.tpl vcluster.image) and the
# rewrite-hosts init container's (the syncer), so the repository takes the upstream registry),
# "default-registry" (vCluster's defaultImageRegistry, prepended to CoreDNS, which it deploys itself), "key" (the
# last key of the path holds the repository as a string: redis-ha's exporter, mariadb-operator's
# RELATED_IMAGE_MARIADB_NAME), "registry-dir" (registry = everything before the image name, repository
# its name: redis-ha's sysctl init container)
IMAGES: tuple[Image, ...] = (
    _i("cilium", "image", "repository", "quay.io/cilium/cilium:v1.20.0"),
    _i("cilium", "operator.image", "repository", "quay.io/cilium/operator:v1.20.0"),  # the chart adds -generic
    _i("cilium", "envoy.image", "repository", f"quay.io/cilium/cilium-envoy:{_ENVOY}"),
    _i("cilium", "hubble.relay.image", "repository", "quay.io/cilium/hubble-relay:v1.20.0"),
    _i("cilium", "hubble.ui.backend.image", "repository", "quay.io/cilium/hubble-ui-backend:v0.13.5"),
    _i("cilium", "hubble.ui.frontend.image", "repository", "quay.io/cilium/hubble-ui:v0.13.5"),
    _i("cilium", "certgen.image", "repository", "quay.io/cilium/certgen:v0.4.8"),
    _i("cilium", "nodeinit.image", "repository", "quay.io/cilium/startup-script:1782916218-36ae25f"),
    _i("cilium", "preflight.image", "repository", "quay.io/cilium/cilium:v1.20.0"),
    _i("cilium", "preflight.envoy.image", "repository", f"quay.io/cilium/cilium-envoy:{_ENVOY}"),
    _i("cilium", "clustermesh.apiserver.image", "repository", "quay.io/cilium/clustermesh-apiserver:v1.20.0"),
    _i("cilium", "encryption.ztunnel.image", "repository", "quay.io/cilium/ztunnel:v1.0.0"),
    *(
        _i("cilium", f"authentication.mutual.spire.install.{k}", "repository", ref)
        for k, ref in (
            ("initImage", "docker.io/library/busybox:1.38.0"),
            ("agent.image", "ghcr.io/spiffe/spire-agent:1.15.2"),
            ("server.image", "ghcr.io/spiffe/spire-server:1.15.2"),
        )
    ),
    _i("csi_driver_nfs", "image.nfs", "repository", "registry.k8s.io/sig-storage/nfsplugin:v4.13.4"),
    *(
        _i("csi_driver_nfs", f"image.{k}", "base", f"registry.k8s.io/sig-storage/{n}")
        for k, n in (
            ("csiProvisioner", "csi-provisioner:v6.3.0"),
            ("csiResizer", "csi-resizer:v2.2.0"),
            ("csiSnapshotter", "csi-snapshotter:v8.6.0"),
            ("livenessProbe", "livenessprobe:v2.19.0"),
            ("nodeDriverRegistrar", "csi-node-driver-registrar:v2.17.0"),
            ("externalSnapshotter", "snapshot-controller:v8.6.0"),
        )
    ),
    *(
        _i("gpu_operator", k, "directory", f"nvcr.io/{d}/{n}")
        for k, d, n in (
            ("operator", "nvidia", f"gpu-operator:{_GPU_OPERATOR}"),
            ("validator", "nvidia", f"gpu-operator:{_GPU_OPERATOR}"),
            ("nodeStatusExporter", "nvidia", f"gpu-operator:{_GPU_OPERATOR}"),
            ("driver", "nvidia", "driver:595.91.07"),
            ("driver.manager", "nvidia/cloud-native", "k8s-driver-manager:v0.12.0"),
            ("toolkit", "nvidia/k8s", "container-toolkit:v1.20.0"),
            ("devicePlugin", "nvidia", "k8s-device-plugin:v0.20.0"),
            ("dcgm", "nvidia/cloud-native", "dcgm:4.6.0-1-ubuntu24.04"),
            ("dcgmExporter", "nvidia/k8s", "dcgm-exporter:4.6.0-4.8.3-distroless"),
            ("gfd", "nvidia", "k8s-device-plugin:v0.20.0"),
            ("migManager", "nvidia/cloud-native", "k8s-mig-manager:v0.15.0"),
            ("gds", "nvidia/cloud-native", "nvidia-fs:2.29.4"),
            ("gdrcopy", "nvidia/cloud-native", "gdrdrv:v2.6"),
            ("vgpuManager.driverManager", "nvidia/cloud-native", "k8s-driver-manager:v0.12.0"),
            ("vgpuDeviceManager", "nvidia/cloud-native", "vgpu-device-manager:v0.5.0"),
            ("vfioManager", "nvidia/cloud-native", "k8s-driver-manager:v0.12.0"),
            ("vfioManager.driverManager", "nvidia/cloud-native", "k8s-driver-manager:v0.12.0"),
            ("sandboxDevicePlugin", "nvidia", "kubevirt-gpu-device-plugin:v1.6.0"),
            ("kataSandboxDevicePlugin", "nvidia/cloud-native", "nvidia-sandbox-device-plugin:v0.0.5"),
            ("ccManager", "nvidia/cloud-native", "k8s-cc-manager:v0.4.3"),
            ("draDriver", "nvidia", "dra-driver-nvidia-gpu:v0.5.0"),
        )
    ),
    # the node-feature-discovery dependency the gpu-operator chart carries (0.19.0, appVersion v0.19.0)
    _i("gpu_operator", "node-feature-discovery.image", "repository", _NFD),
    *(
        _i("slurm", k, "repository", ref, pin=ref == _ALPINE)
        for k, ref in (
            ("controller.slurmctld.image", f"ghcr.io/slinkyproject/slurmctld:{TAGS['slurm']}"),
            ("controller.reconfigure.image", f"ghcr.io/slinkyproject/slurmctld:{TAGS['slurm']}"),
            ("controller.logfile.image", _ALPINE),
            ("restapi.slurmrestd.image", f"ghcr.io/slinkyproject/slurmrestd:{TAGS['slurm']}"),
            ("accounting.slurmdbd.image", f"ghcr.io/slinkyproject/slurmdbd:{TAGS['slurm']}"),
            ("loginsetDefaults.login.image", LOGIN),
            ("loginsetDefaults.initconf.image", _ALPINE),
            ("nodesetDefaults.slurmd.image", f"ghcr.io/slinkyproject/slurmd:{TAGS['slurm']}"),
            ("nodesetDefaults.logfile.image", _ALPINE),
        )
    ),
    *(
        _i("cert_manager", k, "repository", f"quay.io/jetstack/cert-manager-{n}:{_CERT_MANAGER}")
        for k, n in (
            ("image", "controller"),
            ("webhook.image", "webhook"),
            ("cainjector.image", "cainjector"),
            ("acmesolver.image", "acmesolver"),  # the controller's --acme-http01-solver-image
            ("startupapicheck.image", "startupapicheck"),
        )
    ),
    *(
        _i("kueue", k, "repository", f"registry.k8s.io/kueue/{n}:{_KUEUE}")
        for k, n in (
            ("controllerManager.manager.image", "kueue"),
            ("kueueViz.backend.image", "kueueviz-backend"),
            ("kueueViz.frontend.image", "kueueviz-frontend"),
        )
    ),
    *(
        _i("argocd", k, style, ref)
        for k, style, ref in (
            ("global.image", "repository", f"quay.io/argoproj/argocd:{TAGS['argocd']}"),
            ("dex.image", "repository", "ghcr.io/dexidp/dex:v2.45.1"),
            ("redis.image", "repository", "ecr-public.aws.com/docker/library/redis:8.2.3-alpine"),
            ("redis.exporter.image", "repository", "ghcr.io/oliver006/redis_exporter:v1.86.0"),
            ("server.extensions.image", "repository", "quay.io/argoprojlabs/argocd-extension-installer:v1.0.1"),
            ("redis-ha.image", "repository", "ecr-public.aws.com/docker/library/redis:8.2.3-alpine"),
            ("redis-ha.exporter.image", "key", "ghcr.io/oliver006/redis_exporter:v1.75.0"),
            ("redis-ha.haproxy.image", "repository", "ecr-public.aws.com/docker/library/haproxy:3.3.10-alpine"),
            ("redis-ha.configmapTest.image", "repository", "docker.io/koalaman/shellcheck:v0.11.0"),
            ("redis-ha.sysctlImage", "registry-dir", "public.ecr.aws/docker/library/busybox:1.38.0"),
        )
    ),
    *(  # the operator, its webhook and cert controller (one image), and the images the operator starts
        # from its RELATED_IMAGE_* settings (the chart's mariadb-operator-env ConfigMap)
        _i("mariadb_operator", k, style, ref)
        for k, style, ref in (
            ("image", "repository", _MARIADB_OPERATOR),
            ("webhook.image", "repository", _MARIADB_OPERATOR),
            ("certController.image", "repository", _MARIADB_OPERATOR),
            ("config.mariadbImage", "repository", "docker.io/library/mariadb:11.8.8"),
            ("config.mariadbImageName", "key", "docker.io/library/mariadb"),  # the operator appends the version
            ("config.maxscaleImage", "repository", "docker.io/mariadb/maxscale:23.08.5"),
            ("config.exporterImage", "repository", "docker.io/prom/mysqld-exporter:v0.15.1"),
            ("config.exporterMaxscaleImage", "repository", "docker.io/mariadb/maxscale-prometheus-exporter-ubi:v0.0.1"),
        )
    ),
    _i("slurm_operator", "operator.image", "repository", f"ghcr.io/slinkyproject/slurm-operator:{_SLINKY}"),
    _i("slurm_operator", "webhook.image", "repository", f"ghcr.io/slinkyproject/slurm-operator-webhook:{_SLINKY}"),
    *(  # the chart's images default their tag to its version (helm/slurm-bridge/templates/*/_*.tpl)
        _i("slurm_bridge", f"{k}.image", "repository", f"ghcr.io/slinkyproject/slurm-bridge-{k}:{_BRIDGE}")
        for k in ("scheduler", "admission", "controllers")
    ),
    _i("vcluster", "controlPlane.statefulSet.image", "registry", f"ghcr.io/loft-sh/vcluster-pro:{_VCLUSTER}"),
    _i("vcluster", "controlPlane.distro.k8s.image", "registry", "ghcr.io/loft-sh/kubernetes:v1.36.0"),
    _i(
        "vcluster",
        "controlPlane.backingStore.etcd.deploy.statefulSet.image",
        "registry",
        "registry.k8s.io/etcd:3.6.8-0",
    ),
    _i(
        "vcluster", "sync.toHost.pods.rewriteHosts.initContainer.image", "registry", "mirror.gcr.io/library/alpine:3.20"
    ),
    _i("vcluster", "controlPlane.advanced", "default-registry", "docker.io/coredns/coredns:1.14.2"),
)
# charts that pull no image (CRDs only)
NO_IMAGES = ("mariadb_operator_crds", "slurm_operator_crds")
# images gpufleet's own manifests name: the accounts Job and the readiness/upgrade gate Jobs (the
# slurm chart's extraObjects, render/tenants/slurm_ready.py and upgrade_gates.py) run the Slinky login image
OWN = (Image("accounting", (), "own", LOGIN), Image("slurm", ("extraObjects",), "own", LOGIN))


def _split(ref: str) -> tuple[str, str]:
    """(registry, rest) of a fully qualified reference."""
    registry, _sep, rest = ref.partition("/")
    return registry, rest


def pulled(img: Image, mirror: str | None) -> str:
    """Where ``img`` is pulled from with ``mirror`` (None: upstream)."""
    if not mirror:
        return img.upstream
    registry, rest = _split(img.upstream)
    if img.style == "default-registry":  # vCluster prepends defaultImageRegistry (the mirror) to its own
        return f"{mirror}/{rest}"  # Docker Hub name: the one image not under <mirror>/<upstream registry>
    return f"{mirror}/{registry}/{rest}"


def _set(values: dict[str, Any], path: tuple[str, ...], leaf: dict[str, Any]) -> None:
    cur = values
    for k in path:
        nxt = cur.get(k)
        if not isinstance(nxt, dict):
            nxt = cur[k] = {}
        cur = nxt
    cur.update(leaf)


def _repo(ref: str) -> str:
    """``ref`` without its tag (the chart's ``tag``/``version`` key keeps the tag)."""
    head, _sep, last = ref.rpartition("/")
    return f"{head}/{last.split(':', 1)[0]}"


def redirect(chart: str | None, values: dict[str, Any], mirror: str | None) -> dict[str, Any]:
    """``values`` with every image of ``chart`` pulled from ``mirror`` (in place), gpufleet's own
    objects in the chart's ``extraObjects`` (the Slurm tenants' gate Jobs) included; with or without a
    mirror, an image whose chart default floats gets the table's tag."""
    if chart is None:
        return values
    for img in IMAGES:
        if img.chart == chart and img.pin:
            _set(values, img.path, {"tag": img.upstream.rsplit(":", 1)[1]})
    if not mirror:
        return values
    if isinstance(values.get("extraObjects"), list):
        values["extraObjects"] = redirect_manifests(values["extraObjects"], mirror)
    for img in IMAGES:
        if img.chart != chart:
            continue
        to = pulled(img, mirror)
        if img.style == "repository":
            _set(values, img.path, {"repository": _repo(to)})
        elif img.style == "registry":  # under defaultImageRegistry (set below): <mirror>/<repository>
            _set(values, img.path, {"repository": _repo(img.upstream)})
        elif img.style == "directory":
            _set(values, img.path, {"repository": _repo(to).rsplit("/", 1)[0]})
        elif img.style == "base":
            _set(values, img.path[:1], {"baseRepo": f"{mirror}/registry.k8s.io"})
        elif img.style == "default-registry":
            _set(values, img.path, {"defaultImageRegistry": mirror})
        elif img.style == "key":
            _set(values, img.path[:-1], {img.path[-1]: _repo(to)})
        elif img.style == "registry-dir":
            _set(values, img.path, {"registry": _repo(to).rsplit("/", 1)[0]})
    return values


def redirect_manifests(objs: list[dict[str, Any]], mirror: str | None) -> list[dict[str, Any]]:
    """gpufleet's own objects with every container ``image`` pulled from ``mirror`` (a copy)."""

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "image" and isinstance(v, str) and "/" in v:
                    node[k] = f"{mirror}/{v}"
                else:
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    if not mirror:
        return objs
    out = copy.deepcopy(objs)
    walk(out)
    return out


def table(mirror: str | None) -> str:
    """IMAGES.md: every image, the values key that sets it, where it comes from and is pulled."""
    lines = [
        "# Images the fleet pulls",
        "",
        "Rendered by gpufleet from its image table (render/images.py); `gpufleet_image_mirror` "
        + (f"is `{mirror}`." if mirror else "is not set: images come from their upstream registries."),
        "",
        "| chart | values key | upstream | pulled from |",
        "|---|---|---|---|",
    ]
    for img in (*IMAGES, *OWN):
        key = ".".join(img.path) or "-"
        lines.append(f"| {img.chart} | `{key}` | `{img.upstream}` | `{pulled(img, mirror)}` |")
    lines += ["", "Charts that pull no image: " + ", ".join(NO_IMAGES) + "."]
    return "\n".join(lines) + "\n"
