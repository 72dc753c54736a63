"""The one-step departure: a person leaves an organization (docs/identity.md#provisioning-and-departure)."""
