"""Planning: every decision the controller makes, as pure functions that return a plan.

``planner.plan(fhpa, observations, now, config)`` is the entry point: it reads plain models
(``observation.py``: what a member cluster looks like; the FederatedHPA and its status, where the
planner keeps its memory) and returns a ``plan.Plan`` (member HPA actions, replica writes, status,
Events, when to look again). The policies (one strategy module per assignment type under
``policies/``; ``policy.py``, the questions the mechanics ask them; ``divide.py``, ``assignment.py``), the
moves between passes (``priority.py`` spill, ``zero.py``, ``optimization.py``, ``failover.py``) and
what is reported (``status_report.py``, ``plan_events.py``) live beside it; ``cron.py`` decides which
cron fires are due, ``capacity.py`` estimates room from pods and nodes, ``member_hpa.py`` renders the
member HPA. Modules here may import only the standard library's pure modules, pydantic, ``fhpa_api``
and each other: no ports, no runtime, no kube, no client library, and ``now`` is always an argument.
"""
