"""Certificates for the admission webhook when cert-manager is not there (`fhpa certs generate`)."""
