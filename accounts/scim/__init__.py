"""SCIM 2.0 provisioning (RFC 7643/7644) of an organization's members and teams by its identity
provider, under ``/scim/v2/`` (docs/identity.md#provisioning-and-departure)."""
