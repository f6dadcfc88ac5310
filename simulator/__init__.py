"""The multi-cluster simulator: member clusters, their native HPAs and the load, on a virtual clock.

It implements the controller's ports in memory (``cluster``: MemberCluster, ``control_plane``:
ControlPlane, ``clock``: Clock) and drives the controller's own reconcile and cron code (``engine``), so
`fhpa simulate` shows what the real controller would do with a fleet, without a cluster. ``scenario``
reads the YAML files and ``changes`` applies their timed what-ifs, ``load`` holds the load models that
share demand over pods, ``nodes`` plays a cluster autoscaler's node group, ``native_hpa`` and
``replica_calculator`` emulate kube-controller-manager's HPA, ``samples`` are what a run records,
``promises`` measures them and ``report`` writes the summary, CSV and plot; ``baselines`` and
``builtin`` provide the comparisons and the default scenario. See docs/simulator.md.
"""
