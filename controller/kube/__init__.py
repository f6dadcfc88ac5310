"""The ports on the official ``kubernetes`` client: the only package under controller/ that imports it.

clients.py builds API clients from kubeconfigs and maps HTTP failures to controller.errors in one place;
member.py is a member cluster (controller.ports.MemberCluster); control_plane.py is the control plane.
"""
