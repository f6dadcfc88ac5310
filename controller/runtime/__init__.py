"""The running process: what turns the controller's functions into a long-lived, observable service.

``manager.py`` wires it together (the ``fhpa controller run`` command): ``leader.py`` (Lease leader
election), ``shards.py`` and ``shard_elector.py`` (objects split over K shard Leases held by several
replicas: the pure rule, then the Lease I/O), ``watch.py`` (list + watch with bookmarks and re-list
on 410), ``workqueue.py`` (keyed, rate-limited, one reconcile per key at a time), ``timers.py`` (cron
wake-ups), ``health.py`` (``/healthz``, ``/readyz``, ``/metrics``), ``metrics.py`` (Prometheus),
``logs.py`` (structured logs naming the object). It may import the package root, ``planning`` and
``kube``; the rest of the controller never imports it (the ``fhpa`` command line starts it).
"""
