"""The `fhpa` command: one entry point for the simulator, the controller, the webhook and the tools."""
