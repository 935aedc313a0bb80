"""A representative subset of the bad-input corpus through the real modules (ansible-playbook).

One playbook, one task per case (``ignore_errors``), json callback: for every case the module
fails (``failed: true``), its ``msg`` matches the case's expectation (file and key or line), no
traceback (a module crash shows ``module_stdout``/``exception``), and nothing changed on disk (the
case's copy is snapshotted with lstat before and after). Also the crash cases of the
``slurm_topology`` and ``fabric_facts`` modules (dest a directory or under /proc, a bad mode,
Latin-1 and binary ibnetdiscover dumps).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "lib"))

from hostile_cases import CASES, FABRIC, INV, snapshot
from playbook_runner import playbook_env, run_playbook, task_results, write_play

SUBSET = [
    "name-trailing-newline-tenant.name",
    "name-trailing-newline-pool.partition",
    "reserved-tenant-default",
    "reserved-tenant-platform",
    "reserved-namespace-kube-system",
    "collision-component-ns-gpu_operator-vc-research",
    "slurm-max-time-00",
    "slurm-gpu-product-0",
    "path-gitops-0",
    "symlink-tree-subdir",
    "symlink-pool-lock",
    "bomb-unrelated-key-own-file",
    "topo-renamed-hosts",
    "topo-invalid-hostname-0",
    "topo-duplicate-switch-guid",
    "crash-vars-latin1",
    "crash-fabric-garbage",
    "loader-duplicate-gpufleet-key",
    "loader-vault-in-model",
    # tenant values, pools, the apply step's vars, exposure, bounds, truncated names
    "values-host-manifests",
    "values-node-selector-other-tenant",
    "pool-pin-takes-other-tenant-node",
    "pool-taken-into-other-tenant-list",
    "apply-host-vars-gpufleet",
    "apply-ssh-proxy-command",
    "expose-cidr-0",
    "source-versions-0",
    "bound-node-map-regex-0",
    "collision-truncated-vcluster-cluster-role",
]


def playbook(tmp: Path, tasks: list[dict]) -> dict[str, dict]:
    """Each task's localhost result by its name: one play of ``tasks`` through the real modules, in ``tmp``."""
    play = write_play(tmp / "play.yml", tasks)
    env = playbook_env(ANSIBLE_HOME=str(tmp / "ansible-home"), ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    proc = run_playbook("localhost,", play, "-c", "local", env=env, timeout=900, cwd=tmp)
    return {r["name"]: r for r in task_results(proc.stdout)}


def _no_crash(r: dict) -> None:
    assert r.get("failed") is True, r
    text = json.dumps(r)
    # fail_json carries exception "(traceback unavailable)" since ansible-core 2.19; a crash carries
    # a real traceback and MODULE FAILURE / module_stdout
    assert "Traceback (most recent call last)" not in text, text[:2000]
    assert "MODULE FAILURE" not in r.get("msg", "") and "module_stdout" not in r, text[:2000]


def test_gitops_render_module_fails_closed(tmp_path: Path) -> None:
    by_id = {c.id: c for c in CASES}
    tasks, roots = [], {}
    for cid in SUBSET:
        case = by_id[cid]
        root = tmp_path / cid
        repo = root / "repo"
        shutil.copytree(REPO / INV, repo / INV)
        shutil.copytree(REPO / "gitops", repo / "gitops")
        (repo / ".git").mkdir()
        (repo / "outside").mkdir()
        case.mutate(repo)
        roots[cid] = (root, snapshot(root))
        tasks.append(
            {
                "name": cid,
                "gpufleet.core.gitops_render": {"inventory_dir": str(repo / INV)},
                "ignore_errors": True,
            }
        )
    results = playbook(tmp_path, tasks)
    for cid in SUBSET:
        r = results[cid]
        _no_crash(r)
        assert re.search(by_id[cid].expect, r["msg"], re.S), (cid, r["msg"])
        root, before = roots[cid]
        assert snapshot(root) == before, cid


def test_topology_modules_bad_dest_mode_and_encoding(tmp_path: Path) -> None:
    fabric = REPO / FABRIC
    latin = tmp_path / "latin.ibnetdiscover"
    latin.write_bytes(fabric.read_bytes().replace(b'"gpu001 mlx5_0"', b'"gpu\xe9 mlx5_0"'))
    binary = tmp_path / "binary.ibnetdiscover"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" * 64)
    (tmp_path / "adir").mkdir()
    before = snapshot(tmp_path)
    cases = {
        "dest-is-directory": (
            "slurm_topology",
            {"ibnetdiscover": [str(fabric)], "dest": str(tmp_path / "adir")},
            r"dest .*adir' is a directory",
        ),
        "dest-in-proc": (
            "slurm_topology",
            {"ibnetdiscover": [str(fabric)], "dest": "/proc/gpufleet-x/topology.conf"},
            r"dest '/proc/gpufleet-x/topology\.conf'",
        ),
        "bad-mode": (
            "slurm_topology",
            {"ibnetdiscover": [str(fabric)], "dest": str(tmp_path / "t.conf"), "mode": "rw-r--r--"},
            r"mode: mode 'rw-r--r--' is not an octal file mode",
        ),
        "latin1-fabric-topology": (
            "slurm_topology",
            {"ibnetdiscover": [str(latin)]},
            r"latin\.ibnetdiscover:\d+: not UTF-8",
        ),
        "latin1-fabric-facts": ("fabric_facts", {"src": str(latin)}, r"latin\.ibnetdiscover:\d+: not UTF-8"),
        "binary-fabric-facts": (
            "fabric_facts",
            {"src": str(binary)},
            r"binary\.ibnetdiscover(:\d+)?: (not UTF-8|the fabric snapshot is binary)",
        ),
    }
    tasks = [
        {"name": name, f"gpufleet.core.{mod}": args, "ignore_errors": True} for name, (mod, args, _) in cases.items()
    ]
    results = playbook(tmp_path / "pb", tasks) if (tmp_path / "pb").mkdir() is None else {}
    for name, (_, _, expect) in cases.items():
        r = results[name]
        _no_crash(r)
        assert re.search(expect, r["msg"]), (name, r["msg"])
    after = {k: v for k, v in snapshot(tmp_path).items() if not k.startswith("pb")}
    assert after == before
