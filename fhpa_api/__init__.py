"""The FederatedHPA and CronFederatedHPA API: models, defaulting, validation and the cron parser.

Everything here is pure (no I/O): the webhook, the controller, the simulator and the CLI all stand on it,
so a rule or a default is written once.
"""

GROUP = "autoscaling.karmada.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
FEDERATED_HPA = "FederatedHPA"
CRON_FEDERATED_HPA = "CronFederatedHPA"
