"""OAuth 2.1 for remote MCP clients (docs/oauth.md): the protocol's rules (resources, redirect URIs, client
metadata: ``protocol``), connected apps (``services``), django-oauth-toolkit's validator, Client ID Metadata
Documents (``cimd``), the consent page, the metadata, token and registration endpoints and their routes."""
