"""The federated-hpa controller, in three layers (folders) around a thin core.

- ``planning/``: the decisions. Pure functions over plain models that return a plan; no I/O, no clock
  reads, no client library (tests/test_import_contract.py holds it to that).
- the package root: the core that joins decisions to the world. ``ports.py`` (what a member cluster,
  the control plane and the clock offer), ``executor.py`` (the one place that turns a plan into port
  calls), ``reconcile.py`` (observe, plan, execute for one FederatedHPA), ``result.py`` (what every
  reconciler returns: requeue after N seconds, or nothing), the reconcilers ``federated_hpa_controller.py``
  (the namespace guard, the wait for unknown clusters, the finalizer, around ``reconcile.py``) and
  ``cron_controller.py`` (runs due cron rules), ``finalizer.py`` (member clean-up on delete),
  ``member_layer.py`` (a concern wrapped around every call of a member: health gate, timing, fence),
  ``backoff.py`` (the one retry schedule, of the work queue and the list/watch loop), ``errors.py``
  (the ports' failures). These import ``planning`` and nothing of ``runtime`` or ``kube``;
  the runtime's workers and the simulator call the same reconcilers.
- ``kube/``: the ports on the official kubernetes client (member clusters, the control plane, the
  member registry built from kubeconfig Secrets) and the one list/watch loop (``listwatch.py``) behind
  both the member caches and the control-plane informers. The simulator offers the same ports in memory.
- ``runtime/``: the running process: a manager that knows no kind (informers, workers, leader election,
  probes, resync), a controller per kind, the kinds' registration (``fleet.py``), work queue, health
  probes, metrics, logs. It may import everything above.
"""
