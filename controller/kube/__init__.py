"""The ports on the official ``kubernetes`` client: the only package under controller/ that imports it.

clients.py builds API clients from kubeconfigs and sends raw JSON requests; api_errors.py maps every
failure to controller.errors in one place. member.py is a member cluster (controller.ports.MemberCluster):
its writes, on member_reads.py (health, discovery, observe, capacity; capacity_signals.py and
autoscaler_status.py for the room beyond the allocatable) and member_hpas.py (which HPAs are ours).
member_cache.py is a member's watch-backed cache (member_trim.py: what it keeps; member_watches.py: its
watches). control_plane.py is the control plane (controller.ports.ControlPlane); registry.py keeps the
member clusters registered by labelled kubeconfig Secrets; listwatch.py is the one list/watch loop,
behind the member caches and the runtime's control-plane informers alike. It may import the package root
and ``planning``, never ``runtime``.
"""
