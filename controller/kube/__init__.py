"""The ports on the official ``kubernetes`` client: the only package under controller/ that imports it.

clients.py builds API clients from kubeconfigs and maps HTTP failures to controller.errors in one place;
member.py is a member cluster (controller.ports.MemberCluster); control_plane.py is the control plane
(controller.ports.ControlPlane); registry.py keeps the member clusters registered by labelled kubeconfig
Secrets; listwatch.py is the one list/watch loop, behind the member caches (member_cache.py) and the
runtime's control-plane informers alike. It may import the package root and ``planning``, never ``runtime``.
"""
