"""Code for tests, scripts, benchmarks and molecule only, not shipped in plugins/:
``fabric_gen`` (deterministic fat-tree fabrics, ibnetdiscover dumps and Node snapshots) and
``slurm_conf`` (slurm.conf/gres.conf for the real slurmctld the integration tests start).
Put ``tests/lib`` on ``sys.path`` to import it (tests/conftest.py does)."""
