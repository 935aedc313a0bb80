"""Contracts with other components: every label, annotation and field gpufleet selects on or writes for
another component, named once, next to the upstream constant it mirrors (name and file, at the pinned
version). Render, pools, health and day-two code import these names; nothing else spells them.

Each is checked against an object the real component wrote (tests/integration: the Slinky operator
labelling a busy slurmd pod, Kueue ungating a pod in a real vCluster, the kube-apiserver's admission
on a tenant's host namespace), never against a copy of the literal.
"""

from __future__ import annotations

# --- Slinky slurm-operator v1.2.1, api/v1beta1/well_known.go ------------------------------------------
_SLINKY = "slinky.slurm.net/"  # SlinkyPrefix
_NODESET = "nodeset." + _SLINKY  # NodeSetPrefix
# LabelNodeSetPodProtect: set to "true" on a worker pod while its Slurm node runs jobs (and cleared after)
# by internal/controller/nodeset/nodeset_sync_status.go updateNodeSetPodPDBLabels; the operator's own
# budget (internal/builder/workerbuilder/worker_pdb.go) selects it with maxUnavailable 0.
POD_PROTECT_LABEL = _NODESET + "pod-protect"
POD_PROTECT_VALUE = "true"
# AnnotationNodeCordonReason: on a Kubernetes Node, the reason the operator gives the Slurm DRAIN.
NODE_CORDON_REASON = _NODESET + "node-cordon-reason"
# AnnotationNodeTopologySpec: the Slurm dynamic topology line of a Node.
NODE_TOPOLOGY_SPEC = "topology." + _SLINKY + "spec"  # TopologyPrefix + "spec"
# LabelNodeSetPodHostname: a worker pod's Slurm node name.
POD_HOSTNAME_LABEL = _NODESET + "pod-hostname"
# api/v1beta1/nodeset_types.go ScheduledUpdateNodeSetStrategy.Flags are Slurm reservation flags
# (slurmcontrol.go parseReservationFlags). The render sets none: with FORCE_START the operator would make
# the window's reservation once its start has passed, but Slurm 26.05 refuses that flag on a one-off
# reservation ("FORCE_START flag requires a reoccuring reservation"), so a window carrying it never gets
# its reservation at all (daytwo/windows.py: review refuses a window set after its start instead).
# internal/builder/labels/labels.go: AppLabel = "app.kubernetes.io/name", WorkerApp = "slurmd"
APP_LABEL = "app.kubernetes.io/name"
SLURMD_APP = "slurmd"

# --- Argo CD v3.5.1 (gitops-engine pkg/sync/common/types.go) ------------------------------------------
SYNC_WAVE = "argocd.argoproj.io/sync-wave"  # AnnotationSyncWave
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"  # AnnotationSyncOptions
HOOK = "argocd.argoproj.io/hook"  # AnnotationKeyHook
HOOK_DELETE_POLICY = "argocd.argoproj.io/hook-delete-policy"  # AnnotationKeyHookDeletePolicy

# --- Kueue v0.19.2 (the tenant's Jobs and the TAS path through the vCluster) ------------------------------
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"  # pkg/controller/constants/constants.go QueueLabel
# apis/kueue/v1beta2/topology_types.go PodSetRequiredTopologyAnnotation
KUEUE_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
# apis/kueue/v1beta2/topology_types.go TopologySchedulingGate: added at admission, removed by the ungater
# together with the chosen domain's nodeSelector (pkg/controller/tas/topology_ungater.go)
KUEUE_TOPOLOGY_GATE = "kueue.x-k8s.io/topology"

# --- vCluster 0.36.1 ----------------------------------------------------------------------------------
# config/config.go IsVirtualSchedulerEnabled: either value runs a scheduler inside the vCluster; then the
# syncer creates every host pod already bound (pkg/controllers/resources/pods/syncer.go SyncToHost: the
# virtual nodeName is kept, the tenant selector is merged only when nodeName is empty, a nodeName is
# checked only against the *virtual* Nodes).
VIRTUAL_SCHEDULER_VALUES = (
    ("controlPlane", "distro", "k8s", "scheduler", "enabled"),
    ("controlPlane", "advanced", "virtualScheduler", "enabled"),
)
# The controllers that create the vCluster's own control-plane pods in the same host namespace (the
# chart's StatefulSets): kube-controller-manager, with its own or per-controller credentials
# (cmd/kube-controller-manager, --use-service-account-credentials).
CONTROLLER_MANAGER_USERS = (
    "system:kube-controller-manager",
    "system:serviceaccount:kube-system:statefulset-controller",
)

# --- Kubernetes 1.36 ----------------------------------------------------------------------------------
# staging/src/k8s.io/api/core/v1/well_known_labels.go (LabelMetadataName): set by the API server on
# every Namespace, so a policy can be bound to exactly one namespace.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
