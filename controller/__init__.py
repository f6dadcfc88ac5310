"""The federated-hpa controller, in three layers (folders) around a thin core.

- ``planning/``: the decisions. Pure functions over plain models that return a plan; no I/O, no clock
  reads, no client library (tests/test_import_contract.py holds it to that).
- the package root: the core that joins decisions to the world. ``ports.py`` (what a member cluster,
  the control plane and the clock offer), ``executor.py`` (the one place that turns a plan into port
  calls), ``reconcile.py`` (observe, plan, execute for one FederatedHPA), ``cron_controller.py`` (runs
  due cron rules), ``finalizer.py`` (member clean-up on delete), ``errors.py`` (the ports' failures).
  These import ``planning`` and nothing of ``runtime`` or ``kube``.
- ``kube/``: the ports on the official kubernetes client (member clusters, the control plane, the
  member registry built from kubeconfig Secrets). The simulator offers the same ports in memory.
- ``runtime/``: the running process: manager, leader election, watches, work queue, timers, health
  probes, metrics, logs. It may import everything above.
"""
