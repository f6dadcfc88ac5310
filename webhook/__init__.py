"""The admission webhook: a Flask app (`webhook.app.create_app`) served by gunicorn over TLS
(`webhook.server`, `fhpa webhook serve`). It defaults with `fhpa_api.defaulting.default_patch` and
validates with `fhpa_api.validation.validate`; no rule lives here."""
