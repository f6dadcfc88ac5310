"""The running process: what turns the controller's reconcilers into a long-lived, observable service.

``manager.py`` runs what is registered with it and knows no kind: informers (``controller.kube.listwatch``
on the control plane), workers over one work queue, leader election, probes and the resync.
``controller.py`` is what a worker does with one key (the reconciler's ``Result`` back to the queue, log
and fence context, metrics). ``fleet.py`` registers this project's kinds, the member registry's informer
and probes, and member events (``member_events.py``); it is what the ``fhpa controller run`` command
starts. Beside them: ``leader.py`` (Lease leader election), ``shards.py`` and ``shard_elector.py``
(objects split over K shard Leases held by several replicas: the pure rule, then the Lease I/O),
``workqueue.py`` (keyed, rate-limited, delayed adds, one reconcile per key at a time), ``fence.py``
(writes refused once the object is no longer ours), ``health.py`` (``/healthz``, ``/readyz``,
``/metrics``) and ``metrics.py`` (Prometheus). It may import the package root, ``planning`` and
``kube``; the rest of the controller never imports it (the ``fhpa`` command line starts it).
"""
