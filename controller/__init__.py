"""The federated-hpa controller.

Layers, from pure to side-effecting:
- observation.py, plan.py: plain models the planner reads and returns;
- planner modules (assignment.py, priority.py, ...): pure functions, no I/O, no clock reads;
- ports.py: the interfaces a member cluster, the control plane and the clock offer;
- executor.py: the only code that turns a plan into calls on the ports;
- runtime modules (watch loop, leader election, kube adapters): drive it all against real API servers.
"""
