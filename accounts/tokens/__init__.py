"""API tokens: create, revoke, the one-statement lookup every request starts with; the bearer check for both
kinds of token (API tokens and OAuth access tokens, ``authentication``); the revocation of our tokens found
leaked in a text (``services_leaks``); ``GET /api/v1/me`` and ``/projects``; Settings → API tokens."""
