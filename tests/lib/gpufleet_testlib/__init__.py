"""Code for tests, scripts, benchmarks and molecule only, not shipped in plugins/:
``fabric_gen`` (deterministic fat-tree fabrics, ibnetdiscover dumps and Node snapshots) and
``slurm_conf`` (slurm.conf/gres.conf for the real slurmctld the integration tests start),
``slurm_build`` (where the Slurm build the tests run lives, its pinned version and the check of it).
Put ``tests/lib`` on ``sys.path`` to import it (tests/conftest.py does)."""
