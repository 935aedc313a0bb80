"""Tests that run the real Slinky operator against the real control plane and the real Slurm build.

They reuse the other integration harnesses: the local control plane (../kube/controlplane.py) and
the Slurm cluster (../slurm/harness.py, with slurmrestd and JWT).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for sub in ("kube", "slurm"):
    path = str(HERE.parent / sub)
    if path not in sys.path:
        sys.path.insert(0, path)
sys.path.insert(0, str(HERE))
